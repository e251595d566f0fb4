/**
 * PostgreSQL only, from 0023: how the run's functions of migrations-postgres.ts are planned, and (0024) a run's start
 * and commit each as one function body, with nothing read again that a write just returned.
 */
import { sql, type Kysely } from 'kysely';

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
export async function postgresGenericPlans(db: Kysely<any>): Promise<void> {
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
 * when the session does not exist, SB002 with the lease's epoch when the run lost it.
 */
export async function postgresRunsInOneBody(db: Kysely<any>): Promise<void> {
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
      -- The lease: taken when free, expired or the owner's own (kysely-writes.ts leaseTaker).
      INSERT INTO session_lease AS l (session_key, owner, epoch, expires_at) VALUES (p_key, p_owner, 1, v_db_now + p_ttl_ms)
        ON CONFLICT (session_key) DO UPDATE SET owner = p_owner, epoch = l.epoch + 1, expires_at = v_db_now + p_ttl_ms
        WHERE l.owner = p_owner OR l.expires_at < v_db_now
        RETURNING l.epoch INTO v_epoch;
      IF v_epoch IS NULL THEN RETURN json_build_object('status', 'leased'); END IF;
      WITH claimed AS (
        UPDATE inputs SET status = 'claimed', run_id = p_run_id, attempts = attempts + 1, updated_at = p_now
          WHERE id = ANY(p_inputs) AND (status = 'queued') IS TRUE
          RETURNING *)
      SELECT count(*), json_agg(claimed ORDER BY claimed.seq) INTO v_claimed, v_inputs FROM claimed;
      IF v_claimed <> cardinality(p_inputs) THEN RAISE EXCEPTION USING ERRCODE = 'SB001', MESSAGE = 'an input was taken'; END IF;
      INSERT INTO runs (id, session_key, agent_id, status, owner, epoch, model, started_at, ended_at, input_tokens, output_tokens,
          model_calls, steps, preamble_chars, prompt_chars, final_text, error_code, error_message)
        VALUES (p_run_id, p_key, p_agent, 'running', p_owner, v_epoch, p_model, p_now, NULL, 0, 0, 0, 0, 0, 0, NULL, NULL, NULL);
      UPDATE sessions SET state = 'running', updated_at = p_now, last_run_at = p_now WHERE key = p_key RETURNING * INTO v_session;
      IF NOT FOUND THEN RAISE EXCEPTION USING ERRCODE = 'SB003', MESSAGE = 'no session ' || p_key; END IF;
      INSERT INTO events (type, session_key, run_id, payload, created_at) VALUES ('run.started', p_key, p_run_id, p_payload, p_now)
        RETURNING * INTO v_event;
      RETURN json_build_object('status', 'started', 'epoch', v_epoch, 'inputs', v_inputs,
        'event', row_to_json(v_event), 'session', row_to_json(v_session),
        'history', CASE WHEN p_history_limit IS NOT NULL THEN coalesce((SELECT json_agg(t ORDER BY t.seq) FROM
          (SELECT * FROM transcript WHERE session_key = p_key ORDER BY seq DESC LIMIT p_history_limit) t), '[]'::json) END,
        'reachedOut', CASE WHEN p_history_limit IS NOT NULL THEN json_build_object(
          'spawned', EXISTS (SELECT 1 FROM sessions WHERE parent_key = p_key),
          'sent', EXISTS (SELECT 1 FROM exchanges WHERE requester_session = p_key)) END);
    END $$`.execute(db);

  await sql`
    CREATE OR REPLACE FUNCTION sb_commit_run_queued(p_run_id text, p_key text, p_epoch integer, p_now bigint, p_outcome json,
      p_transcript json, p_consumed text[], p_outbox json, p_events json) RETURNS json LANGUAGE plpgsql ${PLANNING} AS $$
    DECLARE
      v_epoch integer;
      v_run runs;
      v_events json;
    BEGIN
      -- The lease goes with the commit; taking it first is the fence (kysely-run-store.ts commit).
      UPDATE session_lease SET expires_at = 0 WHERE session_key = p_key AND epoch = p_epoch RETURNING epoch INTO v_epoch;
      IF v_epoch IS NOT NULL THEN
        UPDATE runs SET status = p_outcome->>'status', ended_at = p_now,
            input_tokens = (p_outcome->>'inputTokens')::bigint, output_tokens = (p_outcome->>'outputTokens')::bigint,
            model_calls = (p_outcome->>'modelCalls')::bigint, steps = (p_outcome->>'steps')::bigint,
            preamble_chars = (p_outcome->>'preambleChars')::bigint, prompt_chars = (p_outcome->>'promptChars')::bigint,
            request_bytes = (p_outcome->>'requestBytes')::bigint, request_system_bytes = (p_outcome->>'requestSystemBytes')::bigint,
            request_tool_bytes = (p_outcome->>'requestToolBytes')::bigint, cached_input_tokens = (p_outcome->>'cachedInputTokens')::bigint,
            final_text = p_outcome->>'finalText', error_code = p_outcome->>'errorCode', error_message = p_outcome->>'errorMessage'
          WHERE id = p_run_id AND (status = 'running') IS TRUE AND epoch = p_epoch
          RETURNING * INTO v_run;
      END IF;
      IF v_run.id IS NULL THEN
        SELECT epoch INTO v_epoch FROM session_lease WHERE session_key = p_key;
        RAISE EXCEPTION USING ERRCODE = 'SB002', MESSAGE = coalesce(v_epoch::text, 'none');
      END IF;
      IF json_array_length(p_transcript) > 0 THEN
        INSERT INTO transcript (session_key, role, content, provenance, input_id, run_id, created_at)
          SELECT p_key, t.value->>'role', t.value->>'content', t.value->>'provenance', t.value->>'inputId', t.value->>'runId', p_now
          FROM json_array_elements(p_transcript) WITH ORDINALITY AS t(value, n) ORDER BY t.n;
      END IF;
      IF cardinality(p_consumed) > 0 THEN
        UPDATE inputs SET status = 'consumed', updated_at = p_now WHERE id = ANY(p_consumed) AND run_id = p_run_id;
      END IF;
      UPDATE sessions SET state = 'idle', updated_at = p_now WHERE key = p_key;
      IF json_array_length(p_outbox) > 0 THEN
        INSERT INTO outbox (id, kind, target, payload, idempotency_key, status, attempts, next_attempt_at, last_error, created_at, delivered_at)
          SELECT o.value->>'id', o.value->>'kind', o.value->>'target', o.value->>'payload', o.value->>'idempotencyKey', 'pending', 0, p_now,
            NULL, p_now, NULL
          FROM json_array_elements(p_outbox) WITH ORDINALITY AS o(value, n) ORDER BY o.n
          ON CONFLICT (idempotency_key) DO NOTHING;
      END IF;
      IF json_array_length(p_events) > 0 THEN
        WITH appended AS (
          INSERT INTO events (type, session_key, run_id, payload, created_at)
            SELECT e.value->>'type', e.value->>'sessionKey', e.value->>'runId', e.value->>'payload', p_now
            FROM json_array_elements(p_events) WITH ORDINALITY AS e(value, n) ORDER BY e.n
            RETURNING *)
        SELECT json_agg(appended ORDER BY appended.seq) INTO v_events FROM appended;
      END IF;
      -- Read after the lease row was taken (0019): a start elsewhere that found the lease held came after its input.
      RETURN json_build_object('run', row_to_json(v_run), 'events', coalesce(v_events, '[]'::json),
        'queued', EXISTS (SELECT 1 FROM inputs WHERE session_key = p_key AND status = 'queued'));
    END $$`.execute(db);
}
