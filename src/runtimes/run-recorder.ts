/**
 * What an external child did in one run, kept two ways (docs/runtimes.md): journaled as it happens (`runtime.update`
 * events, with streamed text chunks merged so that a token-by-token agent writes a few events a second, not hundreds),
 * and as the run's transcript and result once it ends (its messages, its tool calls with their last status and
 * output, and its last message as the result).
 */
import type { ModelMessage } from 'ai';
import type { ExternalRunRequest, RuntimeUpdate } from '../ports/runtimes.js';

const FLUSH_MS = 100;
/** A tool call's output is kept in the transcript up to this many characters. */
const OUTPUT_CHARS = 4000;
/** What one run keeps and journals of a child's text and tool calls at most: a runaway child does not fill the store. */
const RUN_CHARS = 4_000_000;
const MILESTONES = new Set(['session', 'process', 'stop', 'result', 'truncated']);

export interface ToolCallSeen {
  id: string;
  title: string;
  kind?: string;
  status?: string;
  input?: unknown;
  output?: string;
}

type Segment = { type: 'text'; text: string } | { type: 'tool'; call: ToolCallSeen };

export class RunRecorder {
  private readonly segments: Segment[] = [];
  private readonly calls = new Map<string, ToolCallSeen>();
  private pending: RuntimeUpdate[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  private failure: unknown;
  private result: string | undefined;
  private budget = RUN_CHARS;

  constructor(private readonly request: Pick<ExternalRunRequest, 'report' | 'delta'>) {}

  /** Takes `chars` from the run's budget; once it is spent, says so once in the journal and keeps nothing more. */
  private afford(chars: number): boolean {
    if (this.budget <= 0) return false;
    this.budget -= chars;
    if (this.budget > 0) return true;
    this.pending.push({ kind: 'truncated', why: `the child produced more than ${RUN_CHARS} characters; the rest is not kept` });
    return false;
  }

  /** Text of the agent's message, as it streams. */
  text(chunk: string): void {
    if (chunk === '' || !this.afford(chunk.length)) return;
    const last = this.segments.at(-1);
    if (last?.type === 'text') last.text += chunk;
    else this.segments.push({ type: 'text', text: chunk });
    this.request.delta?.(chunk);
    this.chunk('message', chunk);
  }

  /** A whole message (a CLI prints each when it is done): a segment of its own, journaled unless it was streamed before. */
  message(text: string, streamed = false): void {
    if (text === '' || !this.afford(text.length)) return;
    this.segments.push({ type: 'text', text });
    if (!streamed) {
      this.request.delta?.(text);
      this.chunk('message', text);
    }
  }

  /** Text streamed ahead of the whole message that will carry it (pi's deltas): shown live and journaled only. */
  streamed(chunk: string): void {
    if (chunk === '' || !this.afford(chunk.length)) return;
    this.request.delta?.(chunk);
    this.chunk('message', chunk);
  }

  /** The agent's reasoning, as it streams: journaled, not part of the result. */
  thought(chunk: string): void {
    if (chunk !== '' && this.afford(chunk.length)) this.chunk('thought', chunk);
  }

  toolCall(call: ToolCallSeen): void {
    const known = this.calls.get(call.id);
    if (known) {
      this.toolUpdate(call);
      return;
    }
    const kept = { ...call, input: clipInput(call.input), output: clip(call.output) };
    if (!this.afford(JSON.stringify(kept).length)) return;
    this.calls.set(call.id, kept);
    this.segments.push({ type: 'tool', call: kept });
    this.note({ ...kept, kind: 'tool_call', toolKind: kept.kind });
  }

  toolUpdate(update: Partial<ToolCallSeen> & { id: string }): void {
    const call = this.calls.get(update.id);
    if (!call) {
      this.toolCall({ title: update.title ?? update.id, ...update });
      return;
    }
    const clipped = { ...update, input: clipInput(update.input), output: clip(update.output) };
    for (const [key, value] of Object.entries(clipped)) if (value !== undefined) (call as unknown as Record<string, unknown>)[key] = value;
    this.note({ ...clipped, kind: 'tool_call_update', toolKind: update.kind });
  }

  /** Anything else worth journaling (a plan, a permission answered, a file served, a line of a CLI), with what is pending. */
  note(update: RuntimeUpdate): void {
    // The run's own milestones are kept whatever the child spent.
    if (!MILESTONES.has(update.kind) && !this.afford(JSON.stringify(update).length)) return;
    this.pending.push(update);
    this.timer ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  private chunk(kind: 'message' | 'thought', text: string): void {
    const last = this.pending.at(-1);
    if (last?.kind === kind && typeof last.text === 'string') last.text += text;
    else this.pending.push({ kind, text });
    this.timer ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  /** Journals what is pending, after what was journaled before (in order); a journal that fails fails the run's end. */
  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.length === 0) return;
    const updates = this.pending;
    this.pending = [];
    this.writing = this.writing.then(() => this.request.report(updates)).catch((error) => void (this.failure ??= error));
  }

  /** Everything journaled; throws what the journal refused. */
  async settled(): Promise<void> {
    this.flush();
    await this.writing;
    if (this.failure) throw this.failure;
  }

  /** The run's part of the transcript: its messages, and each tool call with its result. */
  messages(): ModelMessage[] {
    const messages: ModelMessage[] = [];
    for (const segment of this.segments) {
      if (segment.type === 'text') {
        messages.push({ role: 'assistant', content: [{ type: 'text', text: segment.text }] });
        continue;
      }
      const { call } = segment;
      const toolName = toolNameOf(call);
      messages.push({ role: 'assistant', content: [{ type: 'tool-call', toolCallId: call.id, toolName, input: call.input ?? {} }] });
      const value = `${call.status ?? 'pending'}${call.title ? `: ${call.title}` : ''}${call.output ? `\n${call.output}` : ''}`;
      messages.push({ role: 'tool', content: [{ type: 'tool-result', toolCallId: call.id, toolName, output: { type: 'text', value } }] });
    }
    return messages;
  }

  /** The result a child gave outright (a result file), in place of its last message. */
  resultIs(text: string): void {
    this.result = text;
    this.note({ kind: 'result', chars: text.length });
  }

  /** The result: what the child gave as such, else its last message. */
  lastMessage(): string | null {
    if (this.result !== undefined) return this.result;
    for (let i = this.segments.length - 1; i >= 0; i--) {
      const segment = this.segments[i];
      if (segment.type === 'text' && segment.text.trim() !== '') return segment.text.trim();
    }
    return null;
  }

  /** Tool calls the child made, by their last status. */
  toolCalls(): ToolCallSeen[] {
    return [...this.calls.values()];
  }
}

/** A tool name the transcript's tool-call part can carry: the ACP kind and a short form of the title. */
function toolNameOf(call: ToolCallSeen): string {
  const name = (call.kind ?? call.title).replace(/[^A-Za-z0-9_-]+/g, '_').slice(0, 64);
  return name || 'tool';
}

/** A tool call's input as kept: whole up to OUTPUT_CHARS of JSON (a write's input may hold a whole file), else its start. */
function clipInput(input: unknown): unknown {
  if (input === undefined) return undefined;
  const text = JSON.stringify(input) ?? '';
  return text.length <= OUTPUT_CHARS ? input : { clipped: clip(text) };
}

function clip(text: string | undefined): string | undefined {
  if (text === undefined || text.length <= OUTPUT_CHARS) return text;
  return `${text.slice(0, OUTPUT_CHARS)}... (${text.length - OUTPUT_CHARS} more characters)`;
}
