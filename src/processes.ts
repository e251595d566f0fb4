/** Child processes started detached lead a process group of their own: ending the group ends what they started too. */

/** Signals the process group `pid` leads; false when the group is gone. */
export function killGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}
