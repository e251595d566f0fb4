/**
 * MCP progress notifications while a tool waits on a session (docs/mcp-server.md, "Progress"): what the journal says
 * of the session (a run started, a step, a tool call, a suspension) and the text its model streams, each a
 * `notifications/progress` with a growing `progress` count and a message. Only for a call that asked for progress
 * (a `progressToken` in its `_meta`); streamed text is sent at most every DELTA_FLUSH_MS, journal events at once.
 */
import type { ServerContext } from '@modelcontextprotocol/server';
import type { Events } from '../ports/gateway.js';
import type { EventRecord } from '../ports/index.js';

const DELTA_FLUSH_MS = 250;
/** How much of the streamed text a progress message carries: its tail. */
const DELTA_TAIL_CHARS = 200;

export class ProgressReporter {
  private count = 0;
  private text = '';
  private flushTimer: NodeJS.Timeout | undefined;
  private readonly stops: (() => void)[] = [];

  /** Starts listening at once: call it before the message goes in, so that no event of its run is missed. */
  constructor(
    events: Pick<Events, 'subscribe' | 'watchDeltas'>,
    private readonly ctx: ServerContext,
    private readonly sessionKey: string,
  ) {
    if (this.token() === undefined) return;
    this.stops.push(
      events.subscribe((live) => {
        if (live.type === 'journal' && live.event.sessionKey === sessionKey) this.send(describe(live.event));
        else if (live.type === 'delta' && live.sessionKey === sessionKey) this.delta(live.text);
      }),
      events.watchDeltas(sessionKey),
    );
  }

  stop(): void {
    clearTimeout(this.flushTimer);
    for (const stop of this.stops.splice(0)) stop();
  }

  private token(): string | number | undefined {
    const token = this.ctx.mcpReq._meta?.progressToken;
    return typeof token === 'string' || typeof token === 'number' ? token : undefined;
  }

  private delta(text: string): void {
    this.text += text;
    this.flushTimer ??= setTimeout(() => {
      this.flushTimer = undefined;
      this.send(`writing: ${this.text.slice(-DELTA_TAIL_CHARS)}`);
    }, DELTA_FLUSH_MS);
  }

  private send(message: string | undefined): void {
    const progressToken = this.token();
    if (message === undefined || progressToken === undefined || this.stops.length === 0) return;
    this.count += 1;
    // A notification that cannot be sent (the client went away) changes nothing about the work.
    void this.ctx.mcpReq
      .notify({ method: 'notifications/progress', params: { progressToken, progress: this.count, message } })
      .catch(() => {});
  }
}

/** A journal event of the session as a line a person (or a model) reads; undefined for those that say nothing new. */
function describe(event: EventRecord): string | undefined {
  const payload = (event.payload ?? {}) as Record<string, unknown>;
  const named = (key: string) => (typeof payload[key] === 'string' ? ` ${payload[key]}` : '');
  switch (event.type) {
    case 'run.started':
      return `${event.sessionKey}: run started`;
    case 'run.step': {
      const tools = Array.isArray(payload.tools) && payload.tools.length > 0 ? `, calling ${payload.tools.join(', ')}` : '';
      return `${event.sessionKey}: model step ${typeof payload.step === 'number' ? payload.step + 1 : ''} answered${tools}`;
    }
    case 'run.suspended':
      return `${event.sessionKey}: run waiting${named('reason')}`;
    case 'run.resumed':
      return `${event.sessionKey}: run resumed`;
    case 'run.completed':
      return `${event.sessionKey}: run ended${named('status')}`;
    case 'runtime.update':
    case 'approval.requested':
    case 'subagent.updated':
      return `${event.sessionKey}: ${event.type}`;
    default:
      return undefined;
  }
}
