/** Exchanges (one per sessions_send) over Kysely; every state change is a compare-and-set. */
import { SwitchboardError } from '../../core/errors.js';
import type { Kysely } from 'kysely';
import type {
  EventRecord,
  ExchangeChanges,
  ExchangeFilter,
  ExchangePhase,
  ExchangeRecord,
  ExchangeReplyState,
  ExchangeStore,
  InputRecord,
  LimitReached,
  NewEvent,
  NewExchange,
  NewInput,
  NewToolCall,
  RateLimit,
} from '../../ports/index.js';
import { toExchange } from '../sql/rows.js';
import { appendEvent, insertInput } from '../sql/writes.js';
import type { Database, ExchangesTable } from '../schema/database.js';
import { takeRate } from '../sql/limits.js';
import { recordToolCall } from '../tool-calls/tool-call-store.js';
import type { SqlDialect } from '../sql/dialect.js';

export class KyselyExchangeStore implements ExchangeStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: SqlDialect,
  ) {}

  open(exchange: NewExchange, input: NewInput, now: number): Promise<{ exchange: ExchangeRecord; input: InputRecord; created: boolean }>;
  open(
    exchange: NewExchange,
    input: NewInput,
    now: number,
    guards: { rate: RateLimit; call?: NewToolCall },
  ): Promise<{ exchange: ExchangeRecord; input: InputRecord; created: boolean } | LimitReached>;
  open(
    exchange: NewExchange,
    input: NewInput,
    now: number,
    guards?: { rate: RateLimit; call?: NewToolCall },
  ): Promise<{ exchange: ExchangeRecord; input: InputRecord; created: boolean } | LimitReached> {
    return this.db.transaction().execute(async (trx) => {
      if (guards) {
        // A repeat (same idempotency key) is answered with what it made before and is not counted.
        const repeat = await trx.selectFrom('inputs').select('id').where('idempotency_key', '=', input.idempotencyKey).executeTakeFirst();
        const limited = repeat ? undefined : await takeRate(trx, this.dialect, guards.rate, input.idempotencyKey, now);
        if (limited) return limited;
        if (guards.call) await recordToolCall(trx, guards.call, now);
      }
      const accepted = await insertInput(trx, input, now);
      if (accepted.created) {
        await trx
          .insertInto('exchanges')
          .values({
            id: exchange.id,
            conversation_id: exchange.conversationId,
            hop: exchange.hop,
            requester_session: exchange.requesterSession,
            requester_agent: exchange.requesterAgent,
            target_session: exchange.targetSession,
            target_agent: exchange.targetAgent,
            request_input_id: accepted.input.id,
            max_turns: exchange.maxTurns,
            phase: 'request',
            turn: 0,
            reply_state: exchange.replyState,
            waiter_run_id: exchange.waiterRunId,
            reply_run_id: null,
            reply_status: null,
            reply_text: null,
            created_at: now,
            updated_at: now,
          })
          .execute();
      }
      const row = await trx.selectFrom('exchanges').selectAll().where('request_input_id', '=', accepted.input.id).executeTakeFirst();
      if (!row) {
        // The idempotency key belongs to an input that is not an exchange request (a send with mode "notify").
        const used = accepted.input;
        throw new SwitchboardError(
          'IDEMPOTENCY_KEY_REUSED',
          `idempotency key "${input.idempotencyKey}" was already used for input ${used.id} to ${used.sessionKey}, stored with mode "${used.mode}" and no reply exchange; a key names one message, so use a new key for this one`,
          { idempotencyKey: input.idempotencyKey, inputId: used.id, mode: used.mode },
        );
      }
      return { exchange: toExchange(row), input: accepted.input, created: accepted.created };
    });
  }

  async get(id: string): Promise<ExchangeRecord | undefined> {
    const row = await this.db.selectFrom('exchanges').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toExchange(row) : undefined;
  }

  async transition(
    id: string,
    from: { replyStates?: ExchangeReplyState[]; phases?: ExchangePhase[]; waiterRunId?: string },
    changes: ExchangeChanges,
    now: number,
    journal?: (moved: ExchangeRecord) => NewEvent | undefined,
  ): Promise<{ exchange: ExchangeRecord; changed: boolean; events: EventRecord[] }> {
    const set: Partial<ExchangesTable> = { updated_at: now };
    if (changes.phase !== undefined) set.phase = changes.phase;
    if (changes.turn !== undefined) set.turn = changes.turn;
    if (changes.replyState !== undefined) set.reply_state = changes.replyState;
    if (changes.waiterRunId !== undefined) set.waiter_run_id = changes.waiterRunId;
    if (changes.replyRunId !== undefined) set.reply_run_id = changes.replyRunId;
    if (changes.replyStatus !== undefined) set.reply_status = changes.replyStatus;
    if (changes.replyText !== undefined) set.reply_text = changes.replyText;
    return this.db.transaction().execute(async (trx) => {
      let update = trx.updateTable('exchanges').set(set).where('id', '=', id);
      if (from.replyStates) update = update.where('reply_state', 'in', from.replyStates);
      if (from.phases) update = update.where('phase', 'in', from.phases);
      if (from.waiterRunId) update = update.where('waiter_run_id', '=', from.waiterRunId);
      const moved = await update.returningAll().executeTakeFirst();
      if (moved) {
        const exchange = toExchange(moved);
        const event = journal?.(exchange);
        return { exchange, changed: true, events: event ? [await appendEvent(trx, event, now)] : [] };
      }
      const current = await trx.selectFrom('exchanges').selectAll().where('id', '=', id).executeTakeFirst();
      if (!current) throw new Error(`no exchange "${id}"`);
      return { exchange: toExchange(current), changed: false, events: [] };
    });
  }

  async list(filter: ExchangeFilter = {}): Promise<ExchangeRecord[]> {
    let query = this.db.selectFrom('exchanges').selectAll();
    if (filter.replyStates) query = query.where('reply_state', 'in', filter.replyStates);
    if (filter.requesterSession) query = query.where('requester_session', '=', filter.requesterSession);
    if (filter.targetSession) query = query.where('target_session', '=', filter.targetSession);
    if (filter.waiterRunId) query = query.where('waiter_run_id', '=', filter.waiterRunId);
    const direction = filter.newest ? 'desc' : 'asc';
    const rows = await query
      .orderBy('created_at', direction)
      .orderBy('id', direction)
      .limit(filter.limit ?? 1000)
      .execute();
    return rows.map(toExchange);
  }
}
