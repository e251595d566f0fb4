/**
 * What a run's one commit writes, built from what it consumed and produced: its transcript entries, its journal
 * events (the outcome, and the reply to the session's channel), and the outbox rows of the exchange steps its
 * inputs belong to. Pure: the session runner commits it (ARCHITECTURE.md section 4.2).
 */
import { conversationOf, onwardHop } from '../../core/hops.js';
import type { IdGenerator, InputRecord, NewEvent, NewOutboxRow, NewTranscriptEntry, SessionRecord } from '../../ports/index.js';
import { ANNOUNCE_SKIP, exchangeStepRow } from '../messaging/exchanges.js';
import type { ExecutedRun } from '../../ports/runtimes.js';
import type { RunTrace } from '../../kit/trace-context.js';

/** A run as it ended: the inputs it started with, those steered into it, and what the tool loop produced. */
export interface FinishedRun {
  runId: string;
  session: SessionRecord;
  inputs: readonly InputRecord[];
  steered: readonly InputRecord[];
  executed: ExecutedRun;
  /** Where the run's span is in its trace (kit/trace-context.ts runTrace, worked out at its start). */
  trace: RunTrace;
}

/** Inputs whose run answers another session rather than the session's own channel. */
const answersAnotherSession = (input: InputRecord) => input.provenance.exchange !== undefined && input.provenance.exchange.step !== 'reply';

/** The inputs first, then the model's messages in order (a steered input where the model saw it), then a note for a failure. */
function transcriptOf({ runId, inputs, steered, executed }: FinishedRun): NewTranscriptEntry[] {
  const transcript: NewTranscriptEntry[] = inputs.map((input) => ({
    role: 'user',
    content: input.text,
    provenance: input.provenance,
    inputId: input.id,
    runId,
  }));
  let steeredIndex = 0;
  for (const message of executed.messages) {
    if (message.role === 'user') {
      const input = steered[steeredIndex++];
      transcript.push({ role: 'user', content: input.text, provenance: input.provenance, inputId: input.id, runId });
    } else if (message.role === 'assistant' || message.role === 'tool') {
      transcript.push({ role: message.role, content: message.content, provenance: null, inputId: null, runId });
    }
  }
  if (executed.status !== 'succeeded' && executed.error) {
    transcript.push({ role: 'note', content: `run ${executed.status}: ${executed.error.message}`, provenance: null, inputId: null, runId });
  }
  return transcript;
}

/**
 * `run.completed`, and the reply to the session's channel (the CLI and control-API channels read it from the
 * journal). A run that only answers another session (a sessions_send request or a ping-pong turn) posts nothing
 * to the channel; an announce step posts unless it says ANNOUNCE_SKIP.
 */
function eventsOf({ runId, session, executed, trace }: FinishedRun, consumed: readonly InputRecord[]): NewEvent[] {
  // Where the run's span is in its trace: the console's trace view finds a trace's runs by it (insight/trace-view.ts).
  const { context, parent } = trace;
  const events: NewEvent[] = [
    {
      type: 'run.completed',
      sessionKey: session.key,
      runId,
      payload: {
        status: executed.status,
        inputIds: consumed.map((input) => input.id),
        finalText: executed.finalText,
        error: executed.error ?? null,
        usage: executed.usage,
        trace: { traceId: context.traceId, spanId: context.spanId, parentSpanId: parent?.spanId ?? null },
      },
    },
  ];
  const text = executed.finalText?.trim() ?? '';
  const forChannel =
    consumed.some((input) => !answersAnotherSession(input)) ||
    (consumed.some((input) => input.provenance.exchange?.step === 'announce') && text !== ANNOUNCE_SKIP);
  if (executed.status === 'succeeded' && text && session.route && forChannel) {
    events.push({
      type: 'session.reply',
      sessionKey: session.key,
      runId,
      payload: { route: session.route, text: executed.finalText, runId, idempotencyKey: `reply:${runId}` },
    });
  }
  return events;
}

export interface RunWrites {
  transcript: NewTranscriptEntry[];
  /** Every input the run consumed: those it started with, then those steered into it. */
  consumed: InputRecord[];
  events: NewEvent[];
  outbox: NewOutboxRow[];
}

/**
 * Where a reply to a channel is delivered by the outbox rather than read from the journal (the mailbox writes a file):
 * the outbox kind that delivers replies to `channel`, or undefined.
 */
export type ReplyDelivery = (channel: string) => string | undefined;

export function runWrites(run: FinishedRun, ids: IdGenerator, replyDelivery: ReplyDelivery = () => undefined): RunWrites {
  const consumed = [...run.inputs, ...run.steered];
  const { runId, executed } = run;
  const step = { runId, status: executed.status, text: executed.finalText, error: executed.error?.message ?? null };
  const outbox = consumed.flatMap((input) => {
    const row = exchangeStepRow(input, step, ids.next());
    return row ? [row] : [];
  });
  const events = eventsOf(run, consumed);
  const reply = events.find((event) => event.type === 'session.reply');
  const route = run.session.route;
  const kind = reply && route ? replyDelivery(route.channel) : undefined;
  if (kind && route) {
    // The message answered: the newest one from the route's peer that carried an id of its own.
    const answered = consumed.filter((input) => input.provenance.peer === route.peer && input.provenance.messageId).at(-1);
    outbox.push({
      id: ids.next(),
      kind,
      target: route.peer ?? '',
      payload: {
        route,
        text: executed.finalText,
        runId,
        replyTo: answered?.provenance.messageId ?? null,
        // The hop budget: a reply that another of our agents reads is one hop further in its conversation.
        conversation: onwardHop(conversationOf(consumed.map((input) => input.provenance)), () => runId),
      },
      idempotencyKey: `reply:${runId}`,
    });
  }
  return { transcript: transcriptOf(run), consumed, events, outbox };
}
