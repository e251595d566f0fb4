/**
 * What an exchange hands on, as inputs into the two sessions (the reply, each ping-pong turn, the announce step)
 * and as journal events. Each input's idempotency key names the exchange and the step, so a replay makes none twice.
 */
import type { TerminalRunStatus } from '../../core/run-status.js';
import type { ExchangeRecord, IdGenerator, NewEvent, NewInput, Provenance } from '../../ports/index.js';

/** A reply that is exactly this ends the ping-pong. */
export const REPLY_SKIP = 'REPLY_SKIP';
/** An announce step that answers exactly this posts nothing. */
export const ANNOUNCE_SKIP = 'ANNOUNCE_SKIP';
export const EXCHANGE_STEP_KIND = 'exchange.step';
export interface ExchangeStepPayload {
  exchangeId: string;
  step: 'request' | 'turn' | 'announce';
  turn: number;
  runId: string | null;
  status: TerminalRunStatus | 'dropped';
  text: string | null;
  error: string | null;
  /** For turns: the message the turn answered, so a REPLY_SKIP still leaves the latest real message. */
  incoming?: string;
}

/** The reply kept on the exchange, as the input that carries it to the requester. */
export function storedReply(exchange: ExchangeRecord, ids: IdGenerator): NewInput {
  return replyInput(exchange, ids, {
    runId: exchange.replyRunId,
    status: exchange.replyStatus as TerminalRunStatus,
    text: exchange.replyText,
    error: null,
  });
}

function provenanceOf(
  exchange: ExchangeRecord,
  from: 'requester' | 'target',
  extra: Omit<NonNullable<Provenance['exchange']>, 'id'>,
): Provenance {
  const fromRequester = from === 'requester';
  return {
    kind: 'inter_session',
    channel: 'internal',
    sourceSession: fromRequester ? exchange.requesterSession : exchange.targetSession,
    sourceAgent: fromRequester ? exchange.requesterAgent : exchange.targetAgent,
    sourceTool: 'sessions_send',
    conversationId: exchange.conversationId,
    hop: exchange.hop,
    exchange: { id: exchange.id, ...extra },
  };
}

/** Odd turns run in the requester's session, even turns in the target's (seed 001 section 6.2). */
export function turnInput(exchange: ExchangeRecord, ids: IdGenerator, turn: number, text: string): NewInput {
  const role = turn % 2 === 1 ? 'requester' : 'target';
  const sessionKey = role === 'requester' ? exchange.requesterSession : exchange.targetSession;
  return {
    id: ids.next(),
    sessionKey,
    idempotencyKey: `exchange:${exchange.id}:turn:${turn}`,
    mode: 'followup',
    text,
    provenance: provenanceOf(exchange, role === 'requester' ? 'target' : 'requester', {
      step: 'turn',
      turn,
      maxTurns: exchange.maxTurns,
      role,
    }),
  };
}

export function replyInput(
  exchange: ExchangeRecord,
  ids: IdGenerator,
  step: Pick<ExchangeStepPayload, 'runId' | 'status' | 'text' | 'error'>,
): NewInput {
  const text =
    step.status === 'succeeded'
      ? (step.text ?? '')
      : `(no reply: the target's run ended "${step.status}"${step.error || step.text ? `: ${step.error ?? step.text}` : ''})`;
  return {
    id: ids.next(),
    sessionKey: exchange.requesterSession,
    idempotencyKey: `exchange:${exchange.id}:reply`,
    mode: 'followup',
    text: text.trim() === '' ? '(the target replied with no text)' : text,
    provenance: provenanceOf(exchange, 'target', { step: 'reply', role: 'requester' }),
  };
}

/**
 * The announce step quotes nothing the target has already seen: the request, its replies and the
 * requester's turns are in its own history. Only a last message it never received is quoted.
 */
export function announceInput(exchange: ExchangeRecord, ids: IdGenerator, unseen: string | null): NewInput {
  const lines = [`Agent-to-agent announce step: your conversation with agent "${exchange.requesterAgent}" above is over.`];
  if (unseen) lines.push('Its last message, which you have not seen:', quote(unseen));
  lines.push(`Write what to post to your channel about it, or reply exactly ${ANNOUNCE_SKIP} to post nothing.`);
  return {
    id: ids.next(),
    sessionKey: exchange.targetSession,
    idempotencyKey: `exchange:${exchange.id}:announce`,
    mode: 'followup',
    text: lines.join('\n'),
    provenance: {
      kind: 'system',
      channel: 'internal',
      sourceTool: 'sessions_send',
      conversationId: exchange.conversationId,
      hop: exchange.hop,
      exchange: { id: exchange.id, step: 'announce', role: 'target' },
    },
  };
}

/** The journal's line for a change of the exchange. */
export function exchangeEvent(exchange: ExchangeRecord, detail: Record<string, unknown>): NewEvent {
  return {
    type: 'exchange.updated',
    sessionKey: exchange.requesterSession,
    payload: {
      exchangeId: exchange.id,
      conversationId: exchange.conversationId,
      requesterSession: exchange.requesterSession,
      targetSession: exchange.targetSession,
      phase: exchange.phase,
      turn: exchange.turn,
      replyState: exchange.replyState,
      ...detail,
    },
  };
}

function quote(text: string): string {
  return text
    .trim()
    .split('\n')
    .map((line) => `> ${line}`)
    .join('\n');
}
