/** Human-readable output for the CLI. */
import type { EventRecord } from '../ports/index.js';

export function table(rows: Record<string, unknown>[], columns: string[]): string {
  if (rows.length === 0) return '(none)';
  const cells = rows.map((row) => columns.map((column) => cell(row[column])));
  const widths = columns.map((column, i) => Math.max(column.length, ...cells.map((row) => row[i].length)));
  const line = (values: string[]) =>
    values
      .map((value, i) => value.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...cells.map(line)].join('\n');
}

function cell(value: unknown): string {
  return shorten(value, 60);
}

/** A value on one line of at most `max` characters: text as it is, anything else as JSON, `-` for nothing. */
export function shorten(value: unknown, max: number): string {
  if (value === null || value === undefined) return '-';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 3)}...` : flat;
}

/** One name per state wherever it is shown: A2A's `TASK_STATE_INPUT_REQUIRED` is `input_required`, as in lists. */
export function stateName(state: string): string {
  return state.replace(/^TASK_STATE_/, '').toLowerCase();
}

/** The one name a person sees for an agent: its identity's name, else its name, else its id. */
export function displayName(agent: { id: string; name?: string | null; identity?: { name?: string } | null }): string {
  return agent.identity?.name ?? agent.name ?? agent.id;
}

export function ago(ms: number | null | undefined, now = Date.now()): string {
  if (!ms) return '-';
  const s = Math.round((now - ms) / 1000);
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.round(s / 60)}m ago`;
  if (s < 86400) return `${Math.round(s / 3600)}h ago`;
  return `${Math.round(s / 86400)}d ago`;
}

/** A transcript entry's content as text: text parts, tool calls and results summarised. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return JSON.stringify(content);
  return content
    .map((part: { type?: string; text?: string; toolName?: string; input?: unknown; output?: { value?: unknown } }) => {
      if (part.type === 'text') return part.text ?? '';
      if (part.type === 'tool-call') return `[calls ${part.toolName}(${JSON.stringify(part.input)})]`;
      if (part.type === 'tool-result') return `[${part.toolName} -> ${JSON.stringify(part.output?.value)}]`;
      return `[${part.type}]`;
    })
    .join(' ');
}

/** One line per journal event, for `sessions tail`. */
export function describeEvent(event: EventRecord): string {
  const time = new Date(event.createdAt).toISOString().slice(11, 23);
  const p = (event.payload ?? {}) as Record<string, unknown>;
  const run = event.runId ? ` run ${event.runId.slice(0, 8)}` : '';
  const clip = (text: unknown) => cell(text ?? '');
  switch (event.type) {
    case 'run.started':
      return `${time} #${event.seq}${run} started`;
    case 'run.completed':
      return `${time} #${event.seq}${run} ${p.status}: ${clip(p.finalText ?? (p.error as { message?: string } | null)?.message)}`;
    case 'session.reply':
      return `${time} #${event.seq}${run} reply to ${(p.route as { channel?: string } | undefined)?.channel ?? '?'}: ${clip(p.text)}`;
    case 'exchange.updated':
      return `${time} #${event.seq} exchange ${String(p.exchangeId).slice(0, 8)} ${p.requesterSession} -> ${p.targetSession}: ${p.phase}, turn ${p.turn}, reply ${p.replyState}`;
    case 'subagent.updated':
      return p.completion
        ? `${time} #${event.seq} sub-agent ${p.childSessionKey ?? p.subagentId}: completion ${p.completion}${p.mode ? ` (${p.mode})` : ''}${p.why ? `: ${p.why}` : ''}`
        : `${time} #${event.seq} sub-agent ${p.childSessionKey}: ${p.state}${p.waiting ? ', waiting for its sub-agents' : ''}${p.diagnostic ? ` - ${p.diagnostic}` : ''}`;
    case 'board.updated':
      return `${time} #${event.seq} board ${String(p.taskId).slice(0, 8)} ${p.event} by ${p.actor}: ${p.state}${p.blockKind ? ` ${p.blockKind}` : ''}${p.reason ? ` (${clip(p.reason)})` : p.error ? ` (${clip(p.error)})` : ''}`;
    case 'runtime.update':
      return ((p.updates as Record<string, unknown>[] | undefined) ?? [])
        .map((update) => `${time} #${event.seq}${run} ${describeRuntimeUpdate(update, clip)}`)
        .join('\n');
    default:
      return `${time} #${event.seq} ${event.type}${run} ${clip(JSON.stringify(p))}`;
  }
}

/** One thing an external runtime's child did (docs/runtimes.md), in a line. */
function describeRuntimeUpdate(update: Record<string, unknown>, clip: (text: unknown) => string): string {
  const { kind } = update;
  switch (kind) {
    case 'message':
    case 'thought':
      return `${kind}: ${clip(update.text)}`;
    case 'tool_call':
    case 'tool_call_update':
      return `tool ${update.title ?? update.id} ${update.status ?? ''}${update.output ? `: ${clip(update.output)}` : ''}`;
    case 'permission':
      return `permission for ${update.title ?? update.toolCallId}: ${update.answered} (${update.why})`;
    case 'file':
      return `file ${update.op} ${update.path}${update.why ? `: ${update.why}` : ''}`;
    case 'terminal':
      return `terminal ${update.op} ${update.terminalId}${update.command ? `: ${clip(update.command)}` : ''}`;
    case 'line':
      return `line ${clip(update.text)}`;
    case 'stop':
      return `stop: ${update.stopReason}`;
    default:
      return `${kind} ${clip(JSON.stringify(update))}`;
  }
}
