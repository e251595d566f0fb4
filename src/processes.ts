/**
 * The gateway's child processes (docs/runtimes.md, docs/tools.md): what environment they get, and how they are ended.
 * Children started detached lead a process group of their own: ending the group ends what they started too.
 */

/**
 * The gateway's environment variables a child sees when they are set: enough to find programs, a home and a locale,
 * and never a secret. Every child (exec commands, runtime children, ACP agents and their terminals, MCP servers) gets
 * these plus the env configured for it, nothing else: an API key a child needs is given to it in its config.
 */
export const CHILD_ENV_ALLOWLIST: readonly string[] = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'TERM',
  'LANG',
  'LC_ALL',
  'TZ',
  'TMPDIR',
];

/** A child's environment: the gateway's variables named in `names` (the allowlist by default), then its own `env`. */
export function childEnvironment(
  own: Readonly<Record<string, string>> = {},
  names: readonly string[] = CHILD_ENV_ALLOWLIST,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of names) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...own };
}

/** Signals the process group `pid` leads; false when the group is gone. */
export function killGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}
