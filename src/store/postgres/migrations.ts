/**
 * 0013, PostgreSQL only: a run's start and a run's commit as functions, so that each is one round trip instead of a
 * transaction of eight or nine statements (run-paths.ts calls them; the portable transactions in
 * runs/run-store.ts do the same, and the store's contract suite runs both). A function runs inside its statement's
 * transaction: the exceptions raised here undo everything it did, as the portable code's throws do.
 */
import { sql, type Kysely } from 'kysely';

/** Raised when an input of the start was taken by another run: the start writes nothing. */
export const START_TAKEN = 'SB001';
/** Raised when the start's session does not exist: the start writes nothing (migration 0021). */
export const START_NO_SESSION = 'SB003';
/** Raised when the commit's run is no longer running under its lease's epoch; the message is the lease's epoch now. */
export const COMMIT_LEASE_LOST = 'SB002';

/*
 * Pieces of the run functions, shared by the migrations that create them (0013, 0021 and, in postgres/migrations-runs.ts,
 * 0024). They are the SQL as released: a database that has run a migration keeps what it created then.
 */

/** A run's lease: taken when free, expired or the owner's own; otherwise the start answers `leased`. */
export const TAKE_LEASE = sql.raw(`
-- The lease: taken when free, expired or the owner's own (sql/writes.ts leaseTaker).
INSERT INTO session_lease AS l (session_key, owner, epoch, expires_at) VALUES (p_key, p_owner, 1, v_db_now + p_ttl_ms)
  ON CONFLICT (session_key) DO UPDATE SET owner = p_owner, epoch = l.epoch + 1, expires_at = v_db_now + p_ttl_ms
  WHERE l.owner = p_owner OR l.expires_at < v_db_now
  RETURNING l.epoch INTO v_epoch;
IF v_epoch IS NULL THEN RETURN json_build_object('status', 'leased'); END IF;`);

/** The run's row, running under the lease's epoch. */
export const INSERT_RUN = sql.raw(`
INSERT INTO runs (id, session_key, agent_id, status, owner, epoch, model, started_at, ended_at, input_tokens, output_tokens,
    model_calls, steps, preamble_chars, prompt_chars, final_text, error_code, error_message)
  VALUES (p_run_id, p_key, p_agent, 'running', p_owner, v_epoch, p_model, p_now, NULL, 0, 0, 0, 0, 0, 0, NULL, NULL, NULL);`);

/** The run's `run.started` event, into v_event. */
export const STARTED_EVENT = sql.raw(`
INSERT INTO events (type, session_key, run_id, payload, created_at) VALUES ('run.started', p_key, p_run_id, p_payload, p_now)
  RETURNING * INTO v_event;`);

/** The commit's fence: the lease, taken under the run's epoch, into v_epoch (NULL when it was lost). */
export const FENCE = sql.raw(`
-- The lease goes with the commit; taking it first is the fence (runs/run-store.ts commit).
UPDATE session_lease SET expires_at = 0 WHERE session_key = p_key AND epoch = p_epoch RETURNING epoch INTO v_epoch;`);

/** The run's row as its outcome leaves it (the start of an UPDATE; the caller adds its WHERE). */
export const OUTCOME = sql.raw(`
UPDATE runs SET status = p_outcome->>'status', ended_at = p_now,
    input_tokens = (p_outcome->>'inputTokens')::bigint, output_tokens = (p_outcome->>'outputTokens')::bigint,
    model_calls = (p_outcome->>'modelCalls')::bigint, steps = (p_outcome->>'steps')::bigint,
    preamble_chars = (p_outcome->>'preambleChars')::bigint, prompt_chars = (p_outcome->>'promptChars')::bigint,
    request_bytes = (p_outcome->>'requestBytes')::bigint, request_system_bytes = (p_outcome->>'requestSystemBytes')::bigint,
    request_tool_bytes = (p_outcome->>'requestToolBytes')::bigint, cached_input_tokens = (p_outcome->>'cachedInputTokens')::bigint,
    final_text = p_outcome->>'finalText', error_code = p_outcome->>'errorCode', error_message = p_outcome->>'errorMessage'`);

/** A commit that found no run to settle: SB002, with the lease's epoch now. */
export const LOST = sql.raw(`
IF v_run.id IS NULL THEN
  SELECT epoch INTO v_epoch FROM session_lease WHERE session_key = p_key;
  RAISE EXCEPTION USING ERRCODE = 'SB002', MESSAGE = coalesce(v_epoch::text, 'none');
END IF;`);

/** The run's transcript entries, in order. */
export const TRANSCRIPT = sql.raw(`
INSERT INTO transcript (session_key, role, content, provenance, input_id, run_id, created_at)
  SELECT p_key, t.value->>'role', t.value->>'content', t.value->>'provenance', t.value->>'inputId', t.value->>'runId', p_now
  FROM json_array_elements(p_transcript) WITH ORDINALITY AS t(value, n) ORDER BY t.n;`);

/** The run's outbox rows, in order; a row whose key is already there is left. */
export const OUTBOX = sql.raw(`
INSERT INTO outbox (id, kind, target, payload, idempotency_key, status, attempts, next_attempt_at, last_error, created_at, delivered_at)
  SELECT o.value->>'id', o.value->>'kind', o.value->>'target', o.value->>'payload', o.value->>'idempotencyKey', 'pending', 0, p_now,
    NULL, p_now, NULL
  FROM json_array_elements(p_outbox) WITH ORDINALITY AS o(value, n) ORDER BY o.n
  ON CONFLICT (idempotency_key) DO NOTHING;`);

/** The run's events, in order, into v_events as they were appended. */
export const EVENTS = sql.raw(`
WITH appended AS (
  INSERT INTO events (type, session_key, run_id, payload, created_at)
    SELECT e.value->>'type', e.value->>'sessionKey', e.value->>'runId', e.value->>'payload', p_now
    FROM json_array_elements(p_events) WITH ORDINALITY AS e(value, n) ORDER BY e.n
    RETURNING *)
SELECT json_agg(appended ORDER BY appended.seq) INTO v_events FROM appended;`);

/**
 * The last two fields of a start's answer: the newest p_history_limit transcript entries and whether the session
 * reached out, with a limit; neither without one.
 */
export const HISTORY = sql.raw(`
'history', CASE WHEN p_history_limit IS NOT NULL THEN coalesce((SELECT json_agg(t ORDER BY t.seq) FROM
  (SELECT * FROM transcript WHERE session_key = p_key ORDER BY seq DESC LIMIT p_history_limit) t), '[]'::json) END,
'reachedOut', CASE WHEN p_history_limit IS NOT NULL THEN json_build_object(
  'spawned', EXISTS (SELECT 1 FROM sessions WHERE parent_key = p_key),
  'sent', EXISTS (SELECT 1 FROM exchanges WHERE requester_session = p_key)) END`);

export async function postgresRunFunctions(db: Kysely<unknown>): Promise<void> {
  await startRunFunction(db, "status = 'queued'");
  await commitRunFunction(db, "status = 'running'");
}

/**
 * sb_start_run; `queued` is the claim's test of an input's status (0013 and 0022 differ only there). Its inputs are
 * found by id.
 */
async function startRunFunction(db: Kysely<unknown>, queued: string): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION sb_start_run(p_key text, p_owner text, p_ttl_ms bigint, p_run_id text, p_agent text,
      p_model text, p_now bigint, p_inputs text[], p_payload text) RETURNS json LANGUAGE plpgsql AS $$
    DECLARE
      v_db_now bigint := (extract(epoch from clock_timestamp()) * 1000)::bigint;
      v_epoch integer;
      v_claimed integer;
      v_event events;
    BEGIN
      ${TAKE_LEASE}
      UPDATE inputs SET status = 'claimed', run_id = p_run_id, attempts = attempts + 1, updated_at = p_now
        WHERE id = ANY(p_inputs) AND ${sql.raw(queued)};
      GET DIAGNOSTICS v_claimed = ROW_COUNT;
      IF v_claimed <> cardinality(p_inputs) THEN RAISE EXCEPTION USING ERRCODE = 'SB001', MESSAGE = 'an input was taken'; END IF;
      ${INSERT_RUN}
      UPDATE sessions SET state = 'running', updated_at = p_now, last_run_at = p_now WHERE key = p_key;
      ${STARTED_EVENT}
      RETURN json_build_object(
        'status', 'started',
        'epoch', v_epoch,
        'inputs', (SELECT json_agg(i ORDER BY i.seq) FROM inputs i WHERE i.id = ANY(p_inputs)),
        'event', row_to_json(v_event));
    END $$`.execute(db);
}

/** sb_commit_run; `running` is the fence's test of the run's status (0013 and 0022 differ only there). */
async function commitRunFunction(db: Kysely<unknown>, running: string): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION sb_commit_run(p_run_id text, p_key text, p_epoch integer, p_now bigint, p_outcome json,
      p_transcript json, p_consumed text[], p_outbox json, p_events json) RETURNS json LANGUAGE plpgsql AS $$
    DECLARE
      v_epoch integer;
      v_run runs;
      v_events json;
    BEGIN
      ${FENCE}
      IF v_epoch IS NOT NULL THEN
        ${OUTCOME}
          WHERE id = p_run_id AND ${sql.raw(running)} AND epoch = p_epoch
          RETURNING * INTO v_run;
      END IF;
      ${LOST}
      ${TRANSCRIPT}
      UPDATE inputs SET status = 'consumed', updated_at = p_now WHERE id = ANY(p_consumed) AND run_id = p_run_id;
      UPDATE sessions SET state = 'idle', updated_at = p_now WHERE key = p_key;
      ${OUTBOX}
      ${EVENTS}
      RETURN json_build_object('run', row_to_json(v_run), 'events', coalesce(v_events, '[]'::json));
    END $$`.execute(db);
}

/**
 * 0014, PostgreSQL only: idempotency keys as text. A client's key is stored scoped to its target session
 * (`client:<session key>:<key>`), so one the API accepts (512 characters) could exceed a varchar(512); SQLite never
 * enforced the length, PostgreSQL refused the input.
 */
export async function postgresKeysAsText(db: Kysely<unknown>): Promise<void> {
  for (const table of ['inputs', 'outbox', 'board_tasks', 'board_events'])
    await sql`ALTER TABLE ${sql.table(table)} ALTER COLUMN idempotency_key TYPE text`.execute(db);
}

/**
 * 0019, PostgreSQL only: a run's commit also says whether its session still holds queued inputs (CommittedRun.queued),
 * read after sb_commit_run has taken the session's lease row. A start on another gateway that found the lease still
 * held came before that, after the input it had accepted, so this read sees the input; a start after it waits for the
 * row and then takes the released lease itself.
 */
export async function postgresCommitSaysQueued(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION sb_commit_run_queued(p_run_id text, p_key text, p_epoch integer, p_now bigint, p_outcome json,
      p_transcript json, p_consumed text[], p_outbox json, p_events json) RETURNS json LANGUAGE plpgsql AS $$
    DECLARE
      v_answer json := sb_commit_run(p_run_id, p_key, p_epoch, p_now, p_outcome, p_transcript, p_consumed, p_outbox, p_events);
    BEGIN
      RETURN json_build_object('run', v_answer->'run', 'events', v_answer->'events',
        'queued', EXISTS (SELECT 1 FROM inputs WHERE session_key = p_key AND status = 'queued'));
    END $$`.execute(db);
}

/**
 * 0020, PostgreSQL only: a run's start also hands back what the run reads next (StartedRun.history and reachedOut):
 * the session's newest `p_history_limit` transcript entries, and whether it has spawned or messaged anyone, read under
 * the lease the start took. With a NULL limit it is sb_start_run's answer alone.
 */
export async function postgresStartWithHistory(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION sb_start_run_history(p_key text, p_owner text, p_ttl_ms bigint, p_run_id text, p_agent text,
      p_model text, p_now bigint, p_inputs text[], p_payload text, p_history_limit integer) RETURNS json LANGUAGE plpgsql AS $$
    DECLARE
      v_answer json := sb_start_run(p_key, p_owner, p_ttl_ms, p_run_id, p_agent, p_model, p_now, p_inputs, p_payload);
    BEGIN
      IF v_answer->>'status' <> 'started' OR p_history_limit IS NULL THEN RETURN v_answer; END IF;
      RETURN json_build_object('status', 'started', 'epoch', v_answer->'epoch', 'inputs', v_answer->'inputs',
        'event', v_answer->'event', 'history', coalesce((SELECT json_agg(t ORDER BY t.seq) FROM
          (SELECT * FROM transcript WHERE session_key = p_key ORDER BY seq DESC LIMIT p_history_limit) t), '[]'::json),
        'reachedOut', json_build_object('spawned', EXISTS (SELECT 1 FROM sessions WHERE parent_key = p_key),
          'sent', EXISTS (SELECT 1 FROM exchanges WHERE requester_session = p_key)));
    END $$`.execute(db);
}

/**
 * 0021, PostgreSQL only: the reads of a session go with the writes that follow them. A run's start hands back its
 * session as the start left it (StartedRun.session), and refuses, writing nothing, a session that does not exist; an
 * input opens its session and is accepted in one call, which also hands back the session's queue when it is short
 * (InputStore.enqueueOpening, as sessions/session-store.ts openSession, sql/writes.ts insertInput and
 * listQueuedForPlan do it).
 */
export async function postgresSessionReads(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION sb_enqueue_opening(p_key text, p_agent text, p_route text, p_create boolean, p_id text,
      p_idempotency_key text, p_mode text, p_text text, p_provenance text, p_now bigint, p_plan_head integer)
      RETURNS json LANGUAGE plpgsql AS $$
    DECLARE
      v_session sessions;
      v_input inputs;
      v_queued json;
      v_count integer;
    BEGIN
      SELECT * INTO v_session FROM sessions WHERE key = p_key;
      IF NOT FOUND THEN
        IF NOT p_create THEN RETURN json_build_object('status', 'missing'); END IF;
        INSERT INTO sessions (key, agent_id, label, parent_key, depth, route, state, created_at, updated_at, last_run_at)
          VALUES (p_key, p_agent, NULL, NULL, 0, p_route, 'idle', p_now, p_now, NULL)
          ON CONFLICT (key) DO NOTHING RETURNING * INTO v_session;
        -- Another caller created it in between.
        IF NOT FOUND THEN SELECT * INTO v_session FROM sessions WHERE key = p_key; END IF;
      END IF;
      IF p_route IS NOT NULL AND v_session.route IS DISTINCT FROM p_route THEN
        UPDATE sessions SET route = p_route, updated_at = p_now WHERE key = p_key;
      END IF;
      INSERT INTO inputs (id, session_key, idempotency_key, mode, status, attempts, text, provenance, run_id, note, created_at, updated_at)
        VALUES (p_id, p_key, p_idempotency_key, p_mode, 'queued', 0, p_text, p_provenance, NULL, NULL, p_now, p_now)
        ON CONFLICT (idempotency_key) DO NOTHING RETURNING * INTO v_input;
      IF FOUND THEN
        -- The session's queue for the scheduler's plan, when it is shallower than the plan's head.
        IF p_plan_head IS NOT NULL THEN
          SELECT count(*), json_agg(q ORDER BY q.seq) INTO v_count, v_queued
            FROM (SELECT * FROM inputs WHERE session_key = p_key AND status = 'queued' ORDER BY seq LIMIT p_plan_head) q;
          IF v_count >= p_plan_head THEN v_queued := NULL; END IF;
        END IF;
        RETURN json_build_object('status', 'created', 'input', row_to_json(v_input), 'queued', v_queued);
      END IF;
      SELECT * INTO v_input FROM inputs WHERE idempotency_key = p_idempotency_key;
      RETURN json_build_object('status', 'existing', 'input', row_to_json(v_input));
    END $$`.execute(db);

  await sql`
    CREATE OR REPLACE FUNCTION sb_start_run_history(p_key text, p_owner text, p_ttl_ms bigint, p_run_id text, p_agent text,
      p_model text, p_now bigint, p_inputs text[], p_payload text, p_history_limit integer) RETURNS json LANGUAGE plpgsql AS $$
    DECLARE
      v_answer json := sb_start_run(p_key, p_owner, p_ttl_ms, p_run_id, p_agent, p_model, p_now, p_inputs, p_payload);
      v_session sessions;
    BEGIN
      IF v_answer->>'status' <> 'started' THEN RETURN v_answer; END IF;
      SELECT * INTO v_session FROM sessions WHERE key = p_key;
      IF NOT FOUND THEN RAISE EXCEPTION USING ERRCODE = 'SB003', MESSAGE = 'no session ' || p_key; END IF;
      RETURN json_build_object('status', 'started', 'epoch', v_answer->'epoch', 'inputs', v_answer->'inputs',
        'event', v_answer->'event', 'session', row_to_json(v_session),
        ${HISTORY});
    END $$`.execute(db);
}

/**
 * 0022, PostgreSQL only: a run's start and commit find their rows by key alone. Their tests of status (an input still
 * `queued`, a run still `running`) were conditions the planner could answer from the indexes on `inputs.status` and
 * `runs.status`; where few rows are queued or running, as statistics taken between loads say, those look as cheap as
 * the keys, and a plan that takes them is kept: each claim then read every queued input, and each commit every running
 * run with the dead versions behind them. `(...) IS TRUE` is the same test on the row found, and no index answers it.
 */
export async function postgresRowsByKey(db: Kysely<unknown>): Promise<void> {
  await startRunFunction(db, "(status = 'queued') IS TRUE");
  await commitRunFunction(db, "(status = 'running') IS TRUE");
}

/**
 * 0011, PostgreSQL's part: an event's transaction takes its xid before its sequence value, so the journal's settled
 * point can be known from snapshots (settled-point.ts): a value taken is then always under a later snapshot's xmax.
 */
export async function eventSeqAfterXid(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE OR REPLACE FUNCTION next_event_seq() RETURNS bigint LANGUAGE sql VOLATILE AS
    $$ SELECT CASE WHEN pg_current_xact_id() IS NOT NULL THEN nextval('events_seq_seq') END $$`.execute(db);
  await sql`ALTER TABLE events ALTER COLUMN seq SET DEFAULT next_event_seq()`.execute(db);
}

/**
 * 0012, PostgreSQL's part: outbox ids as long as a sub-agent's completion makes them (`completion-<sub-agent id>-<run
 * id>`, 84 characters: PostgreSQL refused every completion; SQLite does not enforce a length), and the board's event
 * log numbered after the xid as the journal is (0011), so that its readers can stop at its settled point too.
 */
export async function boardEventSeqAfterXid(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE outbox ALTER COLUMN id TYPE varchar(128)`.execute(db);
  await sql`CREATE OR REPLACE FUNCTION next_board_event_seq() RETURNS bigint LANGUAGE sql VOLATILE AS
    $$ SELECT CASE WHEN pg_current_xact_id() IS NOT NULL THEN nextval('board_events_seq_seq') END $$`.execute(db);
  await sql`ALTER TABLE board_events ALTER COLUMN seq SET DEFAULT next_board_event_seq()`.execute(db);
}

/** 0015, PostgreSQL's part: the memory chunks' full-text index, a generated `tsvector` (English stems) with a GIN index. */
export async function memoryFullText(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE memory_chunks ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED`.execute(db);
  await sql`CREATE INDEX memory_chunks_tsv ON memory_chunks USING GIN (tsv)`.execute(db);
}
