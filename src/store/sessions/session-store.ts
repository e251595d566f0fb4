/** Sessions over Kysely: created on first use, listed, routed, and found by their queued inputs. */
import type { ExpressionBuilder, Kysely, RawBuilder, Selectable } from 'kysely';
import type {
  ExchangeReplyState,
  NewSession,
  ReplyRoute,
  SessionAnnotation,
  SessionFilter,
  SessionOpening,
  SessionRecord,
  SessionStore,
} from '../../ports/index.js';
import { json, num, toSession } from '../sql/rows.js';
import { prepared } from '../sql/prepared.js';
import type { Database, SessionsTable } from '../schema/database.js';
import { relaxed, type Relax } from '../sql/writes.js';

/**
 * An input of a session whose run is not suspended in a wait: that run, and every input queued behind it, goes on when
 * its wait ends (the wake looks at the session), not when a sweep looks.
 */
function notWaiting(eb: ExpressionBuilder<Database, 'inputs'>) {
  return eb.not(
    eb.exists(
      eb
        .selectFrom('runs')
        .select('runs.id')
        .whereRef('runs.session_key', '=', 'inputs.session_key')
        .where('runs.status', '=', 'suspended')
        .where('runs.wake_keys', 'is not', null),
    ),
  );
}

/**
 * Creating a session and setting its route are internal writes (see `Relax`): every caller writes an
 * input to the session next, durably, which covers them.
 */
export class KyselySessionStore implements SessionStore {
  constructor(
    private readonly db: Kysely<Database>,
    /** The database clock: whether a lease still holds is judged by it. */
    private readonly dbNowMs: () => RawBuilder<number>,
    private readonly relax?: Relax,
  ) {}

  async ensure(session: NewSession, now: number): Promise<SessionRecord> {
    return toSession(await ensureSession(this.db, this.relax, session, now));
  }

  open(session: SessionOpening, now: number): Promise<SessionRecord | undefined> {
    return openSession(this.db, this.relax, session, now);
  }

  async get(key: string): Promise<SessionRecord | undefined> {
    const [row] = await sessionByKey(this.db, { key });
    return row ? toSession(row) : undefined;
  }

  async list(filter: SessionFilter = {}): Promise<SessionRecord[]> {
    let query = this.db.selectFrom('sessions').selectAll();
    if (filter.agentId) query = query.where('agent_id', '=', filter.agentId);
    if (filter.label !== undefined) query = query.where('label', '=', filter.label);
    if (filter.parentKey !== undefined) query = query.where('parent_key', '=', filter.parentKey);
    if (filter.updatedSince !== undefined) query = query.where('updated_at', '>=', filter.updatedSince);
    if (filter.archived !== undefined) query = query.where('archived_at', filter.archived ? 'is not' : 'is', null);
    const rows = await query
      .orderBy('updated_at', 'desc')
      .orderBy('key')
      .limit(filter.limit ?? 1000)
      .execute();
    return rows.map(toSession);
  }

  async setRoute(key: string, route: ReplyRoute, now: number): Promise<void> {
    await setRoute(this.db, this.relax, key, route, now);
  }

  async annotate(key: string, change: SessionAnnotation, now: number): Promise<SessionRecord | undefined> {
    const set: { label?: string | null; archived_at?: number | null } = {};
    if (change.label !== undefined) set.label = change.label;
    if (change.archived !== undefined) set.archived_at = change.archived ? now : null;
    if (Object.keys(set).length > 0) await this.db.updateTable('sessions').set(set).where('key', '=', key).execute();
    return this.get(key);
  }

  async listWithQueuedInputs(): Promise<{ key: string; oldestQueuedAt: number }[]> {
    const rows = await this.db
      .selectFrom('inputs')
      .select(['session_key', (eb) => eb.fn.min('created_at').as('oldest')])
      .where('status', '=', 'queued')
      .where(notWaiting)
      .groupBy('session_key')
      .orderBy('oldest')
      .execute();
    return rows.map((row) => ({ key: row.session_key, oldestQueuedAt: num(row.oldest as number) }));
  }

  async listStranded(queuedBefore: number, limit: number): Promise<string[]> {
    const rows = await this.db
      .selectFrom('inputs')
      .select('inputs.session_key')
      .distinct()
      .where('inputs.status', '=', 'queued')
      .where('inputs.created_at', '<', queuedBefore)
      .where(notWaiting)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('session_lease')
              .select('session_lease.epoch')
              .whereRef('session_lease.session_key', '=', 'inputs.session_key')
              .where('session_lease.expires_at', '>=', this.dbNowMs()),
          ),
        ),
      )
      .limit(limit)
      .execute();
    return rows.map((row) => row.session_key);
  }

  async reachedOut(key: string): Promise<{ spawned: boolean; sent: boolean }> {
    const [row] = await reachedOut(this.db, { key });
    // PostgreSQL answers booleans, SQLite 0 or 1.
    return { spawned: truthy(row.spawned), sent: truthy(row.sent) };
  }
}

/** The session, created when missing (an internal write); only one that was there already is read. */
async function ensureSession(db: Kysely<Database>, relax: Relax | undefined, session: NewSession, now: number) {
  const [created] = await relaxed(db, relax, (trx) =>
    insertSession(trx, {
      key: session.key,
      agentId: session.agentId,
      label: session.label ?? null,
      parentKey: session.parentKey ?? null,
      depth: session.depth ?? 0,
      route: session.route ? json(session.route) : null,
      now,
    }),
  );
  const row = created ?? (await sessionByKey(db, { key: session.key }))[0];
  if (!row) throw new Error(`session ${session.key} was neither created nor found`);
  return row;
}

async function setRoute(db: Kysely<Database>, relax: Relax | undefined, key: string, route: ReplyRoute, now: number) {
  await relaxed(db, relax, (trx) =>
    trx
      .updateTable('sessions')
      .set({ route: json(route), updated_at: now })
      .where('key', '=', key)
      .execute(),
  );
}

/**
 * SessionStore.open, also the first half of InputStore.enqueueOpening: read, created when missing and allowed, given
 * the route when it differs.
 */
export async function openSession(
  db: Kysely<Database>,
  relax: Relax | undefined,
  open: SessionOpening,
  now: number,
): Promise<SessionRecord | undefined> {
  const [found] = await sessionByKey(db, { key: open.key });
  if (!found && !open.create) return undefined;
  const session = toSession(found ?? (await ensureSession(db, relax, open, now)));
  if (!open.route || JSON.stringify(session.route) === JSON.stringify(open.route)) return session;
  await setRoute(db, relax, open.key, open.route, now);
  return { ...session, route: open.route, updatedAt: now };
}

/** A new session, or nothing when one with its key is there already. */
const insertSession = prepared<'key' | 'agentId' | 'label' | 'parentKey' | 'depth' | 'route' | 'now', Selectable<SessionsTable>>(
  (db, param) =>
    db
      .insertInto('sessions')
      .values({
        key: param('key'),
        agent_id: param('agentId'),
        label: param('label'),
        parent_key: param('parentKey'),
        depth: param('depth'),
        route: param('route'),
        state: 'idle',
        created_at: param('now'),
        updated_at: param('now'),
        last_run_at: null,
      })
      .onConflict((oc) => oc.column('key').doNothing())
      .returningAll(),
);
const sessionByKey = prepared<'key', Selectable<SessionsTable>>((db, param) =>
  db.selectFrom('sessions').selectAll().where('key', '=', param('key')),
);
/**
 * For each reply state, whether the first reply is still to come to the requester (no waiter took it, and it is not
 * delivered): a new state must say. PostgreSQL's run start (migration 0031) lists the same states.
 */
const TO_COME = {
  awaiting: true,
  held: true,
  reply_held: true,
  detached: true,
  replied: false,
  delivered: false,
} satisfies Record<ExchangeReplyState, boolean>;
const REPLY_TO_COME = (Object.keys(TO_COME) as ExchangeReplyState[]).filter((state) => TO_COME[state]);
const reachedOut = prepared<'key', { spawned: unknown; sent: unknown }>((db, param) =>
  db.selectNoFrom((eb) => [
    eb.exists(eb.selectFrom('sessions').select('key').where('parent_key', '=', param('key'))).as('spawned'),
    // A reply a waiter took or that was delivered leaves nothing to wait for (the index exchanges_reply_to_come).
    eb
      .exists(
        eb
          .selectFrom('exchanges')
          .select('id')
          .where('requester_session', '=', param('key'))
          .where('reply_state', 'in', [...REPLY_TO_COME]),
      )
      .as('sent'),
  ]),
);

const truthy = (value: unknown) => value === true || Number(value) === 1;
