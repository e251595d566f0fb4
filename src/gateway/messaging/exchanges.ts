/**
 * The life of one sessions_send after the request is stored (seed 001 section 6): the target's first
 * reply goes back to the requester, the two sides alternate for up to `maxTurns` ping-pong turns, and the
 * target's announce step posts to its channel. Every step is a real run; every hand-over between runs is
 * an outbox row written in the run's commit (kind `exchange.step`), so a crash replays it and the
 * idempotency keys of the inputs it creates make the replay harmless.
 */
import {
  ANNOUNCE_SKIP,
  announceInput,
  EXCHANGE_STEP_KIND,
  exchangeEvent,
  REPLY_SKIP,
  storedReply,
  turnInput,
  type ExchangeStepPayload,
} from './exchange-inputs.js';
import { randomUUID } from 'node:crypto';
import type {
  Clock,
  EventRecord,
  ExchangeChanges,
  ExchangeRecord,
  IdGenerator,
  InputRecord,
  NewEvent,
  NewInput,
  NewOutboxRow,
  OutboxRecord,
  Store,
} from '../../ports/index.js';
import type { HeldResult } from '../../ports/runtimes.js';

export { ANNOUNCE_SKIP, EXCHANGE_STEP_KIND, REPLY_SKIP, type ExchangeStepPayload } from './exchange-inputs.js';

/** Longest reply text carried from one side to the other. */
const MAX_CARRIED_CHARS = 32_000;

export interface ExchangeFlowDeps {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  /** Stores an input and wakes its session's lane. */
  accept: (input: NewInput) => Promise<InputRecord>;
  /** Publishes events a store write appended (a move of an exchange journals its own, in its transaction). */
  published: (events: readonly EventRecord[]) => void;
}

const isSkip = (text: string | null, token: string) => (text ?? '').trim() === token;

/**
 * A waiter that is not a run (a control API request waiting on `send --from`) gets an `api:` id: what
 * it takes counts as delivered at once, since no run commit follows.
 */
export const apiWaiterId = () => `api:${randomUUID()}`;
export const isApiWaiter = (waiterId: string | null | undefined): boolean => waiterId?.startsWith('api:') ?? false;

/**
 * A waiter that stops waiting lets go of the exchange. A run keeps holding it until it ends, so that a
 * sessions_wait of the same run can still take the reply; an API caller lets go for good.
 */
export const letGo = (waiterId: string): ExchangeChanges =>
  isApiWaiter(waiterId) ? { replyState: 'detached', waiterRunId: null } : { replyState: 'held' };

/** A waiter may take an exchange nobody holds, or one its own run holds. */
const claimable = (exchange: ExchangeRecord, waiterId: string) =>
  exchange.replyState === 'detached' ||
  ((exchange.replyState === 'held' || exchange.replyState === 'reply_held') && exchange.waiterRunId === waiterId);

/** The outbox row a committed (or dropped) exchange input hands on to the flow. */
export function exchangeStepRow(
  input: InputRecord,
  outcome: Omit<ExchangeStepPayload, 'exchangeId' | 'step' | 'turn'>,
  id: string,
): NewOutboxRow | undefined {
  const ref = input.provenance.exchange;
  if (!ref || ref.step === 'reply') return undefined;
  const turn = ref.turn ?? 0;
  const payload: ExchangeStepPayload = {
    exchangeId: ref.id,
    step: ref.step,
    turn,
    ...outcome,
    text: outcome.text?.slice(0, MAX_CARRIED_CHARS) ?? null,
    ...(ref.step === 'turn' ? { incoming: input.text } : {}),
  };
  return { id, kind: EXCHANGE_STEP_KIND, target: ref.id, payload, idempotencyKey: `exchange:${ref.id}:${ref.step}:${turn}:settled` };
}

export class ExchangeFlow {
  constructor(private readonly deps: ExchangeFlowDeps) {}

  /** Outbox handler for `exchange.step`. Safe to run more than once for the same row. */
  async onStep(row: OutboxRecord): Promise<void> {
    const step = row.payload as ExchangeStepPayload;
    const exchange = await this.deps.store.exchanges.get(step.exchangeId);
    if (!exchange) throw new Error(`exchange ${step.exchangeId} does not exist`);
    if (step.step === 'request') await this.onFirstReply(exchange, step);
    else if (step.step === 'turn') await this.onTurn(exchange, step);
    else
      await this.setPhase(
        exchange,
        ['announce'],
        { phase: 'done' },
        { announced: step.status === 'succeeded' && !isSkip(step.text, ANNOUNCE_SKIP) },
      );
  }

  private async onFirstReply(initial: ExchangeRecord, step: ExchangeStepPayload): Promise<void> {
    const reply = {
      replyRunId: step.runId,
      replyStatus: step.status,
      replyText: step.status === 'succeeded' ? (step.text ?? '') : (step.error ?? step.text ?? ''),
    };
    // A waiter holds the exchange: it takes the reply. The run that sent it holds it: the reply is kept for that
    // run. Nobody does: the reply is delivered as a message.
    // A waiter (a tool call, sessions_wait or an API request) may take or let go of the exchange while the reply comes.
    const { exchange } = await this.moveFrom(
      initial,
      ({ replyState }): ExchangeChanges | undefined => {
        if (replyState === 'awaiting') return { replyState: 'replied', ...reply };
        if (replyState === 'held') return { replyState: 'reply_held', ...reply };
        if (replyState === 'detached') return { replyState: 'delivered', waiterRunId: null, ...reply };
        return undefined;
      },
      undefined,
      (moved) => exchangeEvent(moved, { replyState: moved.replyState }),
    );
    // Kept for the run that sent it: the conversation goes on when that run takes the reply (claim) or ends (release).
    if (exchange.replyState !== 'reply_held') await this.afterReply(exchange);
  }

  /**
   * The conversation after the first reply reached its requester. Turn 1 is the requester answering the reply;
   * it also carries the reply into the requester's session, unless a run of it already took the reply (then it
   * would be there twice). With no turn to play, a reply nobody took is delivered as a message. Every step is
   * keyed, so doing this again (a replay) writes nothing new.
   */
  private async afterReply(exchange: ExchangeRecord): Promise<void> {
    const { replyStatus, replyText, waiterRunId } = exchange;
    const takenByRun = waiterRunId !== null && !isApiWaiter(waiterRunId);
    if (replyStatus === 'succeeded' && exchange.maxTurns > 0 && (replyText ?? '').trim() !== '' && !isSkip(replyText, REPLY_SKIP)) {
      await this.deps.accept(
        turnInput(
          exchange,
          this.deps.ids,
          1,
          takenByRun ? `(${exchange.targetAgent}'s reply, which your sessions_send returned above)` : (replyText ?? ''),
        ),
      );
      if (exchange.replyState === 'replied')
        await this.deps.store.exchanges.transition(
          exchange.id,
          { replyStates: ['replied'] },
          { replyState: 'delivered' },
          this.deps.clock.now(),
        );
      await this.setPhase(exchange, ['request'], { phase: 'ping_pong', turn: 1 });
      return;
    }
    if (waiterRunId === null) await this.deps.accept(storedReply(exchange, this.deps.ids));
    await this.finish(exchange, ['request'], null);
  }

  /**
   * A waiter takes an exchange nobody holds or that its own run holds (see `claimable`): it then waits for the
   * reply, or takes at once one kept for its run. Returns the exchange as it is afterwards, and whether this call
   * took it (another wait of the same run may have been first).
   */
  async claim(initial: ExchangeRecord, waiterId: string): Promise<{ exchange: ExchangeRecord; taken: boolean }> {
    // The reply may come (held -> reply_held) between the read and the move.
    const { exchange, moved } = await this.moveFrom(
      initial,
      (current) =>
        claimable(current, waiterId)
          ? { replyState: current.replyState === 'reply_held' ? 'replied' : 'awaiting', waiterRunId: waiterId }
          : undefined,
      undefined,
      // Taking a reply that had come is a change the journal shows; starting to wait is not.
      (taken) => (taken.replyState === 'awaiting' ? undefined : exchangeEvent(taken, { replyState: 'replied' })),
    );
    if (!moved || exchange.replyState === 'awaiting') return { exchange, taken: moved };
    await this.afterReply(exchange);
    return { exchange: (await this.deps.store.exchanges.get(exchange.id)) ?? exchange, taken: true };
  }

  private async onTurn(exchange: ExchangeRecord, step: ExchangeStepPayload): Promise<void> {
    const continues =
      step.status === 'succeeded' && step.turn < exchange.maxTurns && (step.text ?? '').trim() !== '' && !isSkip(step.text, REPLY_SKIP);
    if (!continues) {
      const skipped = step.status !== 'succeeded' || (step.text ?? '').trim() === '' || isSkip(step.text, REPLY_SKIP);
      // The target has every message of the conversation in its own history but the requester's last turn,
      // when the turns ran out on it (odd turns are the requester's).
      const unseen = !skipped && step.turn % 2 === 1 ? step.text : null;
      if (exchange.phase === 'ping_pong' && exchange.turn === step.turn)
        await this.finish(exchange, ['ping_pong'], unseen, { endedAtTurn: step.turn, skipped });
      return;
    }
    const next = step.turn + 1;
    await this.deps.accept(turnInput(exchange, this.deps.ids, next, step.text ?? ''));
    if (exchange.turn === step.turn) await this.setPhase(exchange, ['ping_pong'], { turn: next });
  }

  /** After the last turn: the announce step when the target session has a channel to post to, else done. */
  /** `unseen`: the conversation's last message, when the target has not seen it. */
  private async finish(
    exchange: ExchangeRecord,
    from: ExchangeRecord['phase'][],
    unseen: string | null,
    detail: Record<string, unknown> = {},
  ): Promise<void> {
    const target = await this.deps.store.sessions.get(exchange.targetSession);
    if (target?.route) {
      await this.deps.accept(announceInput(exchange, this.deps.ids, unseen));
      await this.setPhase(exchange, from, { phase: 'announce' }, detail);
    } else {
      await this.setPhase(
        exchange,
        from,
        { phase: 'done' },
        { ...detail, announce: 'skipped: the target session has no channel to post to' },
      );
    }
  }

  private async setPhase(
    exchange: ExchangeRecord,
    from: ExchangeRecord['phase'][],
    changes: { phase?: ExchangeRecord['phase']; turn?: number },
    detail: Record<string, unknown> = {},
  ) {
    await this.transition(exchange.id, { phases: from }, changes, (moved) => exchangeEvent(moved, detail));
  }

  /** A move of the exchange, journalled with it when `journal` makes an event of it (ExchangeStore.transition). */
  private async transition(
    id: string,
    from: Parameters<Store['exchanges']['transition']>[1],
    changes: ExchangeChanges,
    journal?: (moved: ExchangeRecord) => NewEvent | undefined,
  ): Promise<{ exchange: ExchangeRecord; changed: boolean }> {
    const moved = await this.deps.store.exchanges.transition(id, from, changes, this.deps.clock.now(), journal);
    if (moved.events.length > 0) this.deps.published(moved.events);
    return moved;
  }

  /**
   * Replies a waiter took (the HeldResults path settles them): a waiter that is a run keeps its reply
   * only if it commits, otherwise the reply comes to the requester's session as a message. An exchange
   * the run held but did not take is let go, and its reply, once it comes, is delivered as a message.
   */
  async held(runId?: string): Promise<HeldResult[]> {
    const exchanges = await this.deps.store.exchanges.list({
      waiterRunId: runId,
      replyStates: ['awaiting', 'held', 'reply_held', 'replied'],
      limit: 100_000,
    });
    return exchanges.map((exchange): HeldResult => {
      if (exchange.replyState !== 'replied') return { runId: exchange.waiterRunId, settle: () => this.release(exchange) };
      const { id: _id, ...redelivery } = storedReply(exchange, this.deps.ids);
      return {
        runId: exchange.waiterRunId,
        // A caller of the control API took its reply in the HTTP response: there is nothing to deliver again.
        redelivery: isApiWaiter(exchange.waiterRunId) ? undefined : redelivery,
        settle: async (redelivered) => {
          await this.transition(
            exchange.id,
            { replyStates: ['replied'] },
            { replyState: 'delivered', ...(redelivered ? { waiterRunId: null } : {}) },
            (moved) => (redelivered ? exchangeEvent(moved, { redelivered: true }) : undefined),
          );
        },
      };
    });
  }

  /**
   * At the end of the run that held the exchange without taking its reply: lets go of it, or, when the reply
   * has come (it came too late for the run to see it), delivers it as a message.
   */
  private async release(initial: ExchangeRecord): Promise<void> {
    const holder = initial.waiterRunId ?? undefined;
    const waiting = (current: ExchangeRecord) => current.replyState === 'awaiting' || current.replyState === 'held';
    const { exchange, moved: letGoOf } = await this.moveFrom(
      initial,
      (current) => (waiting(current) ? { replyState: 'detached', waiterRunId: null } : undefined),
      holder,
    );
    if (letGoOf) return;
    if ((exchange.replyState !== 'reply_held' && exchange.replyState !== 'replied') || exchange.waiterRunId !== initial.waiterRunId) return;
    // The conversation goes on first, as if nobody had held the reply; a crash before the move below does it again,
    // which writes nothing new.
    await this.afterReply({ ...exchange, waiterRunId: null });
    await this.transition(
      exchange.id,
      { replyStates: [exchange.replyState], waiterRunId: holder },
      { replyState: 'delivered', waiterRunId: null },
      (moved) => exchangeEvent(moved, { replyState: 'delivered' }),
    );
  }

  /**
   * One compare-and-set from the state the exchange is in (and, given, its holder), tried again from the state it
   * finds, until a move lands or `next` has none for the state found. Every hand-over of an exchange goes this way.
   */
  private async moveFrom(
    initial: ExchangeRecord,
    next: (current: ExchangeRecord) => ExchangeChanges | undefined,
    waiterRunId?: string,
    journal?: (moved: ExchangeRecord) => NewEvent | undefined,
  ) {
    let exchange = initial;
    for (let changes = next(exchange); changes; changes = next(exchange)) {
      const moved = await this.transition(exchange.id, { replyStates: [exchange.replyState], waiterRunId }, changes, journal);
      exchange = moved.exchange;
      if (moved.changed) return { exchange, moved: true };
    }
    return { exchange, moved: false };
  }
}
