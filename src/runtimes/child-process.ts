/**
 * A runtime's child process (docs/runtimes.md): started in a process group of its own, so that a kill or a timeout
 * ends everything it started (`terminate`: its group and the descendants that left it, ProcessTree), with the last lines of its stderr kept for the report of a crash. While it
 * runs, its pid is recorded (ChildRecords, src/processes.ts), so that a gateway that was killed ends what its previous
 * process left running when it starts again, instead of leaving agents working for nobody.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { type ChildRecords, childEnvironment, type ProcessTree } from '../processes.js';

const STDERR_LINES = 20;

export interface ChildSpec {
  command: string;
  args: readonly string[];
  env: Record<string, string>;
  cwd: string;
}

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the program could not be started at all (ENOENT and the like). */
  spawnError?: string;
}

export class RuntimeChild {
  readonly process: ChildProcess;
  /** Settles once the process has exited (or could not start). */
  readonly exited: Promise<ChildExit>;
  private readonly stderr: string[] = [];
  private partialStderr = '';
  private done = false;
  private readonly tree: ProcessTree | undefined;

  constructor(
    spec: ChildSpec,
    private readonly records: ChildRecords,
    private readonly recordName: string,
    onStderr?: (line: string) => void,
  ) {
    this.process = spawn(spec.command, [...spec.args], {
      cwd: spec.cwd,
      // The allowlist and the child's own env, never the gateway's secrets.
      env: childEnvironment(spec.env),
      stdio: ['pipe', 'pipe', 'pipe'],
      // Its own process group: a kill ends what it started too.
      detached: true,
    });
    this.exited = new Promise((resolve) => {
      this.process.once('error', (error) => {
        this.finish();
        resolve({ code: null, signal: null, spawnError: error.message });
      });
      this.process.once('exit', (code, signal) => {
        this.finish();
        resolve({ code, signal });
      });
    });
    this.tree = this.process.pid !== undefined ? records.add(recordName, this.process.pid) : undefined;
    this.process.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      const lines = (this.partialStderr + chunk).split('\n');
      this.partialStderr = lines.pop() ?? '';
      for (const line of lines) this.keep(line, onStderr);
    });
    // A child that stops reading its stdin must not crash the gateway with EPIPE.
    this.process.stdin?.on('error', () => {});
  }

  get pid(): number | undefined {
    return this.process.pid;
  }

  private keep(line: string, onStderr?: (line: string) => void): void {
    if (line.trim() === '') return;
    this.stderr.push(line.length > 500 ? `${line.slice(0, 500)}...` : line);
    if (this.stderr.length > STDERR_LINES) this.stderr.shift();
    onStderr?.(line);
  }

  private finish(): void {
    this.done = true;
    this.records.remove(this.recordName);
  }

  /** The last lines it wrote to stderr. */
  stderrTail(): string[] {
    return this.partialStderr.trim() ? [...this.stderr, this.partialStderr] : [...this.stderr];
  }

  /** Ends its tree (its group and what left it): SIGTERM, then SIGKILL after `graceMs`; settles once the child has exited. */
  async terminate(graceMs: number): Promise<ChildExit> {
    const { tree } = this;
    if (tree && !this.done) {
      tree.scan();
      tree.signal('SIGTERM');
      const timer = setTimeout(() => tree.kill(), graceMs);
      await this.exited;
      clearTimeout(timer);
    }
    // The child is gone; what it started may not be.
    tree?.kill();
    return this.exited;
  }
}

/** How a child that ended by itself is described: its exit code or signal, and its last stderr lines. */
export function describeExit(exit: ChildExit, stderr: readonly string[]): string {
  if (exit.spawnError) return `could not be started: ${exit.spawnError}`;
  const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
  return stderr.length > 0 ? `${how}; its last stderr lines:\n${stderr.join('\n')}` : how;
}
