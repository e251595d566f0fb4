/**
 * PostgreSQL only, from 0023: how the run's functions of postgres/migrations.ts are planned, and (0024) a run's start
 * and commit each as one function body, with nothing read again that a write just returned.
 */
import { type RawBuilder, sql, type Kysely } from 'kysely';
import { EVENTS, FENCE, HISTORY, INSERT_RUN, LOST, OUTBOX, OUTCOME, STARTED_EVENT, TAKE_LEASE, TRANSCRIPT } from './migrations.js';

/** The settings every run function runs with (0023). */
const PLANNING = sql.raw('SET plan_cache_mode = force_generic_plan SET enable_seqscan = off');

/**
 * 0023, PostgreSQL only: the statements of the run's functions keep one plan per connection, and it finds rows by key.
 * Left to choose, the plan cache planned some of them again on every call: the claim's `id = ANY(...)` looked cheaper
 * planned for the call's one id than in general for an array of unknown length; planning was about a tenth of the
 * server's time under load. A general plan is made from the statistics of its moment, though, and kept: one made
 * while `inputs` was small read the whole table to find an input until the next ANALYZE. With sequential scans off,
 * every statement here, which all look rows up by key, takes its index whatever the statistics say. An ANALYZE
 * (table-statistics.ts) still makes the plans again.
 */
export async function postgresGenericPlans(db: Kysely<unknown>): Promise<void> {
  for (const fn of [
    'sb_start_run(text, text, bigint, text, text, text, bigint, text[], text)',
    'sb_commit_run(text, text, integer, bigint, json, json, text[], json, json)',
    'sb_commit_run_queued(text, text, integer, bigint, json, json, text[], json, json)',
    'sb_start_run_history(text, text, bigint, text, text, text, bigint, text[], text, integer)',
    'sb_enqueue_opening(text, text, text, boolean, text, text, text, text, text, bigint, integer)',
  ])
    await sql`ALTER FUNCTION ${sql.raw(fn)} ${PLANNING}`.execute(db);
}

/**
 * 0024: a run's start (sb_start_run_history) and commit (sb_commit_run_queued) each in one body, where each called the
 * function of the step before (sb_start_run, sb_commit_run) and took its answer apart again. The claim hands back the
 * inputs it claimed and the session's update the session, where each was read again after; the commit skips the
 * inserts it has no rows for. The answers are the same, and so are the errors: SB001 when an input was taken, SB003
 * when the session does not exist, SB002 with the lease's epoch when the run lost it. The two inner functions are
 * dropped.
 */
export async function postgresRunsInOneBody(db: Kysely<unknown>): Promise<void> {
  await startRunHistory(db, HISTORY);

  await sql`
    CREATE OR REPLACE FUNCTION sb_commit_run_queued(p_run_id text, p_key text, p_epoch integer, p_now bigint, p_outcome json,
      p_transcript json, p_consumed text[], p_outbox json, p_events json) RETURNS json LANGUAGE plpgsql ${PLANNING} AS $$
    DECLARE
      v_epoch integer;
      v_run runs;
      v_events json;
    BEGIN
      ${FENCE}
      IF v_epoch IS NOT NULL THEN
        ${OUTCOME}
          WHERE id = p_run_id AND (status = 'running') IS TRUE AND epoch = p_epoch
          RETURNING * INTO v_run;
      END IF;
      ${LOST}
      IF json_array_length(p_transcript) > 0 THEN
        ${TRANSCRIPT}
      END IF;
      IF cardinality(p_consumed) > 0 THEN
        UPDATE inputs SET status = 'consumed', updated_at = p_now WHERE id = ANY(p_consumed) AND run_id = p_run_id;
      END IF;
      UPDATE sessions SET state = 'idle', updated_at = p_now WHERE key = p_key;
      IF json_array_length(p_outbox) > 0 THEN
        ${OUTBOX}
      END IF;
      IF json_array_length(p_events) > 0 THEN
        ${EVENTS}
      END IF;
      -- Read after the lease row was taken (0019): a start elsewhere that found the lease held came after its input.
      RETURN json_build_object('run', row_to_json(v_run), 'events', coalesce(v_events, '[]'::json),
        'queued', EXISTS (SELECT 1 FROM inputs WHERE session_key = p_key AND status = 'queued'));
    END $$`.execute(db);

  // Nothing calls the two functions they called any more.
  await sql`DROP FUNCTION sb_start_run(text, text, bigint, text, text, text, bigint, text[], text)`.execute(db);
  await sql`DROP FUNCTION sb_commit_run(text, text, integer, bigint, json, json, text[], json, json)`.execute(db);
}

/**
 * 0031, PostgreSQL's part: a start's `reachedOut.sent` says whether a reply is still to come to the session
 * (SessionStore.reachedOut): an exchange whose reply a waiter took, or that is delivered, leaves nothing for
 * sessions_wait. The shared part's index (requester_session, reply_state) finds the others; the states are those
 * session-store.ts's TO_COME says a reply is to come in.
 */
export async function postgresReplyToCome(db: Kysely<unknown>): Promise<void> {
  await startRunHistory(
    db,
    sql.raw(`
'history', CASE WHEN p_history_limit IS NOT NULL THEN coalesce((SELECT json_agg(t ORDER BY t.seq) FROM
  (SELECT * FROM transcript WHERE session_key = p_key ORDER BY seq DESC LIMIT p_history_limit) t), '[]'::json) END,
'reachedOut', CASE WHEN p_history_limit IS NOT NULL THEN json_build_object(
  'spawned', EXISTS (SELECT 1 FROM sessions WHERE parent_key = p_key),
  'sent', EXISTS (SELECT 1 FROM exchanges WHERE requester_session = p_key
    AND reply_state IN ('awaiting', 'held', 'reply_held', 'detached'))) END`),
  );
}

/** sb_start_run_history as 0024 made it; `history` is the answer's last two fields (HISTORY in 0024). */
async function startRunHistory(db: Kysely<unknown>, history: RawBuilder<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION sb_start_run_history(p_key text, p_owner text, p_ttl_ms bigint, p_run_id text, p_agent text,
      p_model text, p_now bigint, p_inputs text[], p_payload text, p_history_limit integer) RETURNS json LANGUAGE plpgsql
      ${PLANNING} AS $$
    DECLARE
      v_db_now bigint := (extract(epoch from clock_timestamp()) * 1000)::bigint;
      v_epoch integer;
      v_claimed integer;
      v_inputs json;
      v_session sessions;
      v_event events;
    BEGIN
      ${TAKE_LEASE}
      WITH claimed AS (
        UPDATE inputs SET status = 'claimed', run_id = p_run_id, attempts = attempts + 1, updated_at = p_now
          WHERE id = ANY(p_inputs) AND (status = 'queued') IS TRUE
          RETURNING *)
      SELECT count(*), json_agg(claimed ORDER BY claimed.seq) INTO v_claimed, v_inputs FROM claimed;
      IF v_claimed <> cardinality(p_inputs) THEN RAISE EXCEPTION USING ERRCODE = 'SB001', MESSAGE = 'an input was taken'; END IF;
      ${INSERT_RUN}
      UPDATE sessions SET state = 'running', updated_at = p_now, last_run_at = p_now WHERE key = p_key RETURNING * INTO v_session;
      IF NOT FOUND THEN RAISE EXCEPTION USING ERRCODE = 'SB003', MESSAGE = 'no session ' || p_key; END IF;
      ${STARTED_EVENT}
      RETURN json_build_object('status', 'started', 'epoch', v_epoch, 'inputs', v_inputs,
        'event', row_to_json(v_event), 'session', row_to_json(v_session),
        ${history});
    END $$`.execute(db);
}
