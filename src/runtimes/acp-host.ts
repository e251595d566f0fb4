/**
 * What the gateway serves an ACP agent as its client (docs/runtimes.md): text files read and written inside the
 * workdir only, with the workspace tools' checks (after symlinks, atomic writes, the mailbox's reservations), and
 * terminals (commands run in the workdir, each in a process group of its own) when the policy allows `execute`.
 * Everything it does is noted in the run's journal; every terminal is ended with the run.
 */
import type {
  CreateTerminalRequest,
  ReadTextFileRequest,
  TerminalExitStatus,
  TerminalOutputResponse,
  WriteTextFileRequest,
} from '@agentclientprotocol/sdk';
import { RequestError } from '@agentclientprotocol/sdk';
import { readFile, stat } from 'node:fs/promises';
import { atomicWrite, describeFsError, resolveExisting, resolveForWrite, shownPath } from '../tools/workspace-fs.js';
import type { ChildRecords } from '../processes.js';
import { RuntimeChild } from './child-process.js';
import type { PermissionPolicy } from './acp-permissions.js';
import type { RunRecorder } from './run-recorder.js';

const MAX_READ_BYTES = 10 * 1024 * 1024;
const DEFAULT_OUTPUT_BYTES = 1024 * 1024;
const MAX_TERMINALS = 16;

interface Terminal {
  child: RuntimeChild;
  output: string;
  truncated: boolean;
  limit: number;
  exit?: TerminalExitStatus;
}

export interface HostOptions {
  /** The workdir after symlinks: every path must lead inside it. */
  root: string;
  policy: PermissionPolicy;
  /** The config key the policy is under, for refusals. */
  source: string;
  recorder: RunRecorder;
  records: ChildRecords;
  /** A prefix for the terminals' pid records (the run id). */
  recordPrefix: string;
  writeRefusal: (path: string) => Promise<string | undefined>;
  graceMs: number;
  /** Puts a command to a person (`execute: "ask"`): a terminal opened without an approved execute permission first. */
  askToRun: (command: { command: string; args: string[]; cwd: string }) => Promise<{ approved: boolean; why: string }>;
}

export class AcpHost {
  private readonly terminals = new Map<string, Terminal>();
  private made = 0;

  constructor(private readonly options: HostOptions) {}

  /**
   * What the execute permissions a person approved (`execute: "ask"`) asked to run, as the agent described it (its raw
   * input, as text), not used by a terminal yet: each lets one terminal run a command it names.
   */
  private readonly executeApproved: string[] = [];

  approvedExecute(rawInput: unknown): void {
    this.executeApproved.push(typeof rawInput === 'string' ? rawInput : JSON.stringify(rawInput ?? ''));
  }

  /** Takes the approval whose description names this command and each of its arguments, if one does. */
  private takeApproval(command: string, args: readonly string[]): boolean {
    const index = this.executeApproved.findIndex((described) => [command, ...args].every((word) => described.includes(word)));
    if (index < 0) return false;
    this.executeApproved.splice(index, 1);
    return true;
  }

  /** Whether the agent is told it may use terminals (initialize's client capabilities): with `ask`, each one asked. */
  get terminalsOffered(): boolean {
    return this.options.policy.execute === 'allow' || this.options.policy.execute === 'ask';
  }

  async readTextFile(request: ReadTextFileRequest): Promise<{ content: string }> {
    const { root } = this.options;
    const path = await this.checked(request.path, () => resolveExisting(root, request.path));
    const size = (await stat(path)).size;
    if (size > MAX_READ_BYTES) throw RequestError.invalidParams(undefined, `${request.path} is ${size} bytes, past ${MAX_READ_BYTES}`);
    let content = await readFile(path, 'utf8');
    if (request.line || request.limit) {
      const from = Math.max(0, (request.line ?? 1) - 1);
      const lines = content.split('\n');
      content = lines.slice(from, request.limit ? from + request.limit : undefined).join('\n');
    }
    this.options.recorder.note({ kind: 'file', op: 'read', path: shownPath(root, path), chars: content.length });
    return { content };
  }

  async writeTextFile(request: WriteTextFileRequest): Promise<Record<string, never>> {
    const { root, policy, source } = this.options;
    if (policy.edit === 'deny') throw RequestError.invalidParams(undefined, `writing files is denied (${source}.edit)`);
    const path = await this.checked(request.path, () => resolveForWrite(root, request.path));
    const refusal = await this.options.writeRefusal(path);
    if (refusal) throw RequestError.invalidParams(undefined, refusal);
    const bytes = await atomicWrite(path, request.content);
    this.options.recorder.note({ kind: 'file', op: 'write', path: shownPath(root, path), bytes });
    return {};
  }

  async createTerminal(request: CreateTerminalRequest): Promise<{ terminalId: string }> {
    const { root, source, policy } = this.options;
    if (policy.execute !== 'allow' && policy.execute !== 'ask')
      throw RequestError.invalidParams(undefined, `running commands is denied (${source}.execute is not "allow")`);
    if (this.terminals.size >= MAX_TERMINALS)
      throw RequestError.invalidParams(undefined, `${MAX_TERMINALS} terminals are open already; release one first`);
    const cwd = await this.checked(request.cwd ?? '.', () => resolveExisting(root, request.cwd ?? '.'));
    if (policy.execute === 'ask' && !this.takeApproval(request.command, request.args ?? [])) {
      // A command no approved permission names (the agent did not ask, or asked about another) is put to a person.
      const answer = await this.options.askToRun({ command: request.command, args: request.args ?? [], cwd });
      if (!answer.approved) throw RequestError.invalidParams(undefined, `running ${request.command} was refused: ${answer.why}`);
      if (this.terminals.size >= MAX_TERMINALS)
        throw RequestError.invalidParams(undefined, `${MAX_TERMINALS} terminals are open already; release one first`);
    }
    const terminalId = `term-${++this.made}`;
    const env = Object.fromEntries((request.env ?? []).map((variable) => [variable.name, variable.value]));
    const child = new RuntimeChild(
      { command: request.command, args: request.args ?? [], env, cwd },
      this.options.records,
      `${this.options.recordPrefix}-${terminalId}`,
    );
    child.process.stdin?.end();
    const terminal: Terminal = { child, output: '', truncated: false, limit: request.outputByteLimit ?? DEFAULT_OUTPUT_BYTES };
    const take = (chunk: Buffer) => {
      terminal.output += chunk.toString('utf8');
      if (Buffer.byteLength(terminal.output) > terminal.limit) {
        // Truncated from the beginning, at a character boundary (the protocol's rule).
        const bytes = Buffer.from(terminal.output);
        terminal.output = bytes
          .subarray(bytes.length - terminal.limit)
          .toString('utf8')
          .replace(/^\uFFFD/, '');
        terminal.truncated = true;
      }
    };
    child.process.stdout?.on('data', take);
    child.process.stderr?.on('data', take);
    void child.exited.then((exit) => {
      terminal.exit = { exitCode: exit.code, signal: exit.signal };
    });
    this.terminals.set(terminalId, terminal);
    this.options.recorder.note({
      kind: 'terminal',
      op: 'create',
      terminalId,
      command: [request.command, ...(request.args ?? [])].join(' '),
    });
    return { terminalId };
  }

  terminalOutput(terminalId: string): TerminalOutputResponse {
    const terminal = this.terminal(terminalId);
    return { output: terminal.output, truncated: terminal.truncated, exitStatus: terminal.exit ?? null };
  }

  async waitForExit(terminalId: string): Promise<TerminalExitStatus> {
    const exit = await this.terminal(terminalId).child.exited;
    return { exitCode: exit.code, signal: exit.signal };
  }

  async killTerminal(terminalId: string): Promise<Record<string, never>> {
    await this.terminal(terminalId).child.terminate(this.options.graceMs);
    return {};
  }

  async releaseTerminal(terminalId: string): Promise<Record<string, never>> {
    const terminal = this.terminal(terminalId);
    this.terminals.delete(terminalId);
    await terminal.child.terminate(this.options.graceMs);
    this.options.recorder.note({ kind: 'terminal', op: 'release', terminalId, exit: terminal.exit ?? null });
    return {};
  }

  /** Ends every terminal still open (the run is over). */
  async close(): Promise<void> {
    const open = [...this.terminals.values()];
    this.terminals.clear();
    await Promise.all(open.map((terminal) => terminal.child.terminate(this.options.graceMs)));
  }

  private terminal(terminalId: string): Terminal {
    const terminal = this.terminals.get(terminalId);
    if (!terminal) throw RequestError.invalidParams(undefined, `no terminal "${terminalId}" (released, or never created)`);
    return terminal;
  }

  /** A path resolved inside the workdir, or the refusal the agent is answered with (and the journal notes). */
  private async checked(path: string, resolve: () => Promise<string>): Promise<string> {
    try {
      return await resolve();
    } catch (error) {
      // The workspace tools' words, about the workdir: named once, whether or not the message named the root.
      const { root } = this.options;
      const why = describeFsError(error, path)
        .replace(`the workspace ${root}`, 'the workspace')
        .replace('the workspace', `the workdir ${root}`);
      this.options.recorder.note({ kind: 'file', op: 'refused', path, why });
      throw RequestError.invalidParams(undefined, why);
    }
  }
}
