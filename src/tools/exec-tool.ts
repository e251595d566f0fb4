/**
 * `exec` (docs/tools.md): a command run in the session's workspace without a shell, under a timeout, an output
 * cap and an environment allowlist. Off unless the agent's `exec.enabled`; never in a sandboxed session. A call
 * goes through the tool-call ledger: a crashed run's retry does not run the command a second time. While a command
 * runs, its pid is recorded with the gateway's other children: a gateway killed meanwhile ends it when it starts again.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { EXEC_DEFAULTS } from '../config/schema-tools.js';
import type { SwitchboardConfig } from '../config/schema.js';
import { sandboxedBy } from '../core/session-access.js';
import { ChildRecords, childEnvironment } from '../processes.js';
import { defineTool } from './tool-contract.js';
import type { GatewayTool } from '../ports/tools.js';
import { text, textList } from './schema.js';
import { describeFsError, workspaceRoot } from './workspace-fs.js';

export interface ExecLimits {
  timeoutSeconds: number;
  maxOutputBytes: number;
  env: readonly string[];
}

/** The agent's exec settings over agents.defaults.exec, or why the session may not run commands. */
export function execPolicyOf(config: SwitchboardConfig, agentId: string, sessionKey: string): ExecLimits | { refused: string } {
  const agent = config.agents.list.find((candidate) => candidate.id === agentId);
  const settings = { ...EXEC_DEFAULTS, ...stripUndefined(config.agents.defaults.exec), ...stripUndefined(agent?.exec) };
  if (!settings.enabled)
    return { refused: `exec is off for agent "${agentId}"; set agents.list[${agentId}].exec.enabled: true to let it run commands` };
  const sandbox = agent && sandboxedBy(agent, sessionKey);
  if (sandbox) return { refused: `exec never runs in a sandboxed session (${sandbox})` };
  return settings;
}

const stripUndefined = <T extends object>(value: T | undefined): Partial<T> =>
  Object.fromEntries(Object.entries(value ?? {}).filter(([, inner]) => inner !== undefined)) as Partial<T>;

export interface ExecResult {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  timedOut?: true;
  truncated?: true;
}

/**
 * Runs `command` with `args` in `cwd`, killing its tree (its process group and what left it, ProcessTree) at the timeout or
 * on abort; recorded in `records` while it runs.
 */
export function runCommand(
  command: string,
  args: string[],
  cwd: string,
  limits: ExecLimits,
  signal: AbortSignal,
  records: ChildRecords = new ChildRecords(undefined),
): Promise<ExecResult> {
  const env = childEnvironment({}, limits.env);
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env, shell: false, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const recordName = `exec-${randomUUID()}`;
    const tree = child.pid !== undefined ? records.add(recordName, child.pid) : undefined;
    const output = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
    let kept = 0;
    let truncated = false;
    let timedOut = false;
    const kill = () => {
      tree?.kill();
      // A descendant the tree could not find may hold the pipes open: a killed command's end does not wait for it.
      const release = () => {
        child.stdout.destroy();
        child.stderr.destroy();
      };
      if (child.exitCode !== null || child.signalCode !== null) release();
      else child.once('exit', release);
    };
    const collect = (stream: 'stdout' | 'stderr') => (chunk: Buffer) => {
      const room = limits.maxOutputBytes - kept;
      if (chunk.length > room) truncated = true;
      if (room <= 0) return;
      output[stream].push(chunk.subarray(0, room));
      kept += Math.min(room, chunk.length);
    };
    child.stdout.on('data', collect('stdout'));
    child.stderr.on('data', collect('stderr'));
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, limits.timeoutSeconds * 1000);
    signal.addEventListener('abort', kill, { once: true });
    const finish = (exitCode: number | null, exitSignal: string | null, failure?: string) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', kill);
      records.remove(recordName);
      resolve({
        exitCode,
        signal: exitSignal,
        stdout: Buffer.concat(output.stdout).toString('utf8'),
        stderr: failure ?? Buffer.concat(output.stderr).toString('utf8'),
        ...(timedOut ? { timedOut: true as const } : {}),
        ...(truncated ? { truncated: true as const } : {}),
      });
    };
    child.on('error', (error: NodeJS.ErrnoException) =>
      finish(null, null, error.code === 'ENOENT' ? `command "${command}" was not found on the PATH the command sees` : error.message),
    );
    child.on('close', (code, closeSignal) => finish(code, closeSignal));
  });
}

export function createExecTool(config: SwitchboardConfig, records?: ChildRecords): GatewayTool {
  return defineTool({
    name: 'exec',
    description: 'Run a command (no shell) in your workspace.',
    effects: true,
    deferred: true,
    available: async (session) => session.workspace !== undefined,
    refusedTo: (session) => {
      const policy = execPolicyOf(config, session.agentId, session.sessionKey);
      return 'refused' in policy ? policy.refused : undefined;
    },
    parameters: z.object({ command: text(), args: textList(0, 200, 'arguments').optional() }),
    approval: {
      // The command line as a person reads it: `exec:git push*` asks for every push.
      subject: (args) => [args.command, ...((args.args as string[] | undefined) ?? [])].join(' '),
      details: async (args, context) => ({ command: args.command, args: args.args ?? [], cwd: context.workspace ?? null }),
      editable: true,
    },
    async execute({ command, args = [] }, context) {
      const policy = execPolicyOf(config, context.agentId, context.sessionKey);
      if ('refused' in policy) return { status: 'forbidden', error: policy.refused };
      let root: string;
      try {
        root = await workspaceRoot(context.workspace);
      } catch (error) {
        return { status: 'error', error: describeFsError(error, '.') };
      }
      const earlier = await context.beginEffect?.({ command, args });
      if (earlier?.state === 'completed') return earlier.recorded;
      if (earlier)
        return {
          status: 'error',
          error:
            'an earlier attempt of this run started this command and then the gateway stopped; it is not run a second time, and its output is lost. Check its effects, then run it again if that is safe',
        };
      const result = await runCommand(command, args, root, policy, context.signal, records);
      const status = result.exitCode === 0 ? 'ok' : 'error';
      const why = result.timedOut ? { error: `timed out after ${policy.timeoutSeconds}s (exec.timeoutSeconds) and was killed` } : {};
      return {
        status,
        ...result,
        ...why,
        ...(result.truncated ? { note: `output cut at ${policy.maxOutputBytes} bytes (exec.maxOutputBytes)` } : {}),
      };
    },
  });
}
