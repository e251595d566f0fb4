/**
 * Following the journal from the terminal (`sessions tail`, `board watch`, `events`): the gateway's event stream,
 * and when the gateway goes away (it stopped, or was killed and the stream was cut), a line on stderr that says so
 * with the command that resumes from the last event, then reconnects from that event (`?after=`) until it is back,
 * so nothing is missed or printed twice. Ctrl-C ends it.
 */
import { errorMessage, SwitchboardError } from '../core/errors.js';
import type { EventRecord } from '../ports/index.js';
import type { ControlClient } from './client.js';
import { withQuery } from './shared.js';

const RETRY_MS = [500, 1000, 2000, 5000];

export interface FollowOptions {
  /** The stream's filters (`sessionKey`, `type`, `deltas`). */
  query: Record<string, string | number | undefined>;
  /** Replays the journal after this event first; without it, only new events. */
  after?: number;
  /** The command that resumes, given the last event seen (for the line on stderr). */
  resume: (after: number) => string;
  /** A journal event. */
  onEvent: (record: EventRecord, raw: string) => void | Promise<void>;
  /** A streamed text delta (`deltas: 1`). */
  onDelta?: (delta: { runId?: string; text: string }, raw: string) => void;
  /** Stops following (tests); Ctrl-C does too. */
  signal?: AbortSignal;
  stderr?: (line: string) => void;
}

/** The newest journal event the gateway published, or undefined (a gateway that does not say, or an old one). */
async function newestSeq(control: ControlClient): Promise<number | undefined> {
  const { journalSeq } = await control.request<{ journalSeq?: unknown }>('GET', '/v1/status');
  return typeof journalSeq === 'number' ? journalSeq : undefined;
}

/** `connect` is asked again at each reconnect: a gateway that restarted may listen on another port (`--port 0`). */
export async function followJournal(connect: () => ControlClient, options: FollowOptions): Promise<void> {
  const stop = new AbortController();
  const onInterrupt = () => stop.abort();
  process.once('SIGINT', onInterrupt);
  options.signal?.addEventListener('abort', onInterrupt, { once: true });
  const say = options.stderr ?? ((line: string) => process.stderr.write(`${line}\n`));
  let last = options.after;
  let failures = 0;
  // Events and deltas are handled one after another, in order, even when a handler reads more from the gateway.
  let queue = Promise.resolve();
  try {
    while (!stop.signal.aborted) {
      let error: unknown;
      try {
        // Only new events, from the newest one the gateway has now: a reconnect before any event arrived resumes there.
        if (last === undefined) last = await newestSeq(connect());
        await connect().stream(
          withQuery('/v1/events', { ...options.query, after: last }),
          (event) => {
            failures = 0;
            if (event.event === 'delta') {
              const delta = JSON.parse(event.data) as { runId?: string; text: string };
              queue = queue.then(() => options.onDelta?.(delta, event.data));
              return;
            }
            const record = JSON.parse(event.data) as EventRecord;
            last = record.seq;
            queue = queue.then(() => options.onEvent(record, event.data)).catch((failure) => say(`switchboard: ${errorMessage(failure)}`));
          },
          stop.signal,
          () => {
            if (failures > 0) say('switchboard: reconnected');
          },
        );
      } catch (failure) {
        // A refusal (a wrong token, a bad filter) is not a gateway that went away.
        if (!SwitchboardError.isInstance(failure) || failure.code !== 'GATEWAY_UNREACHABLE') throw failure;
        error = failure;
      }
      await queue;
      if (stop.signal.aborted) break;
      const wait = RETRY_MS[Math.min(failures, RETRY_MS.length - 1)];
      failures += 1;
      if (failures === 1) {
        const why = error ? errorMessage(error) : 'the gateway closed the stream';
        say(
          `switchboard: ${why}; reconnecting${last === undefined ? '' : ` from event #${last}`} (or resume later with: ${options.resume(last ?? 0)})`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  } finally {
    process.off('SIGINT', onInterrupt);
  }
}
