/**
 * The JSON lines CLI agents print (docs/runtimes.md), read into a run's record: pi's `--mode json` events
 * (`message_end`, `tool_execution_*`), Claude Code's `--output-format stream-json` (`assistant`, `user`, `result`),
 * Codex's `exec --json` (`item.*`, `turn.failed`), and a plain `{"text": ...}` of a script. A line of any other shape
 * is journaled as it is and changes nothing else.
 */
import type { RunRecorder } from './run-recorder.js';

const LINE_CHARS = 2000;

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** The text parts of a message's content (a string, or blocks of `{type: "text", text}`). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((part): part is Json => isObject(part) && part.type === 'text' && typeof part.text === 'string')
    .map((part) => part.text as string)
    .join('');
}

/** What the lines said about the run's end, beyond the exit code. */
export interface LineVerdict {
  /** The CLI reported a failure (Claude's `is_error`, Codex's `turn.failed`). */
  failure?: string;
  /** The CLI gave its result outright (Claude's `result`). */
  result?: string;
}

export class JsonLineReader {
  readonly verdict: LineVerdict = {};
  private piStreamed = false;

  constructor(private readonly recorder: RunRecorder) {}

  /** One line of stdout. */
  line(text: string): void {
    if (text.trim() === '') return;
    let event: unknown;
    try {
      event = JSON.parse(text);
    } catch {
      this.recorder.note({ kind: 'line', text: clip(text) });
      return;
    }
    if (!isObject(event)) {
      this.recorder.note({ kind: 'line', text: clip(text) });
      return;
    }
    // pi repeats the whole message in every delta: those only stream, and are not journaled line by line.
    if (event.type !== 'message_update') this.recorder.note({ kind: 'line', type: str(event.type) ?? null, text: clip(text) });
    this.read(event);
  }

  private read(event: Json): void {
    const type = str(event.type);
    const item = isObject(event.item) ? event.item : undefined;
    const message = isObject(event.message) ? event.message : undefined;
    switch (type) {
      case 'message_update': {
        const delta = isObject(event.assistantMessageEvent) ? event.assistantMessageEvent : undefined;
        if (delta?.type === 'text_delta' && typeof delta.delta === 'string') {
          this.piStreamed = true;
          this.recorder.streamed(delta.delta);
        }
        return;
      }
      case 'message_end':
        if (message?.role === 'assistant') this.recorder.message(textOf(message.content), this.piStreamed);
        this.piStreamed = false;
        return;
      case 'tool_execution_start':
        this.recorder.toolCall({ id: String(event.toolCallId), title: String(event.toolName), status: 'in_progress', input: event.args });
        return;
      case 'tool_execution_end': {
        const output = isObject(event.result) ? textOf(event.result.content) : undefined;
        this.recorder.toolUpdate({ id: String(event.toolCallId), status: event.isError ? 'failed' : 'completed', output });
        return;
      }
      case 'assistant':
      case 'user':
        this.claudeContent(message?.content);
        return;
      case 'result':
        if (typeof event.result === 'string') this.verdict.result = event.result;
        if (event.is_error === true)
          this.verdict.failure = `the agent reported an error: ${str(event.result) ?? str(event.subtype) ?? 'unknown'}`;
        return;
      case 'item.started':
      case 'item.updated':
      case 'item.completed':
        if (item) this.codexItem(item, type === 'item.completed');
        return;
      case 'turn.failed':
      case 'error': {
        const error = isObject(event.error) ? str(event.error.message) : str(event.message);
        this.verdict.failure = `the agent reported an error: ${error ?? 'unknown'}`;
        return;
      }
      default:
        if (typeof event.text === 'string' && (event.type === undefined || event.type === 'text' || event.type === 'message'))
          this.recorder.message(event.text);
    }
  }

  /** Claude Code's message content: text, tool uses, and (in `user` lines) their results. */
  private claudeContent(content: unknown): void {
    if (!Array.isArray(content)) return;
    for (const part of content) {
      if (!isObject(part)) continue;
      if (part.type === 'text' && typeof part.text === 'string') this.recorder.message(part.text);
      else if (part.type === 'tool_use')
        this.recorder.toolCall({ id: String(part.id), title: String(part.name), status: 'in_progress', input: part.input });
      else if (part.type === 'tool_result')
        this.recorder.toolUpdate({
          id: String(part.tool_use_id),
          status: part.is_error ? 'failed' : 'completed',
          output: textOf(part.content),
        });
    }
  }

  /** Codex's items: its messages, and its commands and file changes as tool calls. */
  private codexItem(item: Json, completed: boolean): void {
    const id = String(item.id ?? '');
    if (item.type === 'agent_message') {
      if (completed && typeof item.text === 'string') this.recorder.message(item.text);
      return;
    }
    if (item.type === 'reasoning' || !id) return;
    const title = str(item.command) ?? str(item.type) ?? 'tool';
    const status = completed
      ? item.status === 'failed' || (typeof item.exit_code === 'number' && item.exit_code !== 0)
        ? 'failed'
        : 'completed'
      : 'in_progress';
    this.recorder.toolCall({ id, title, kind: str(item.type), status, output: str(item.aggregated_output) });
  }
}

function clip(text: string): string {
  return text.length > LINE_CHARS ? `${text.slice(0, LINE_CHARS)}...` : text;
}
