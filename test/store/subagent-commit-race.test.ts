/**
 * On PostgreSQL, a sub-agent's run that ends while a follow-up for it (subagents followup, steer) is being stored:
 * the run's commit decides whether the sub-agent settles or waits for its queued inputs, so it reads the sub-agent and
 * counts its queued inputs with the sub-agent's row held (FOR UPDATE), as `reopen` reads it. Otherwise a follow-up
 * stored between the count and the settle was left queued in a sub-agent recorded as finished, whose parent never
 * hears of it. The interleaving is made, not waited for: another transaction holds the sub-agent's row while the
 * commit starts, and the follow-up is stored once the commit is seen waiting on a lock.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NewInput } from '../../src/ports/index.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { dropSchemas, POSTGRES_URL, postgresReachable } from '../helpers/postgres.js';
import { waitUntil } from '../helpers/wait.js';

const PARENT = 'agent:support:main';
const CHILD = 'agent:support:subagent:c1';

function input(id: string, idempotencyKey: string): NewInput {
  return {
    id,
    sessionKey: CHILD,
    idempotencyKey,
    mode: 'followup',
    text: 'more',
    provenance: { kind: 'subagent_task', sourceSession: PARENT },
  };
}

if (process.env.CI || (await postgresReachable())) {
  describe('sub-agent run commit against a follow-up on PostgreSQL', () => {
    const schema = `sb_subagent_race_${process.pid}`;
    let store!: PostgresStore;
    beforeAll(async () => {
      store = await PostgresStore.open({ connectionString: POSTGRES_URL, schema, maxConnections: 4 });
    });
    afterAll(async () => {
      await store?.close();
      await dropSchemas(schema);
    });

    it('a follow-up stored while the run commits is not left queued in a settled sub-agent: the sub-agent waits for it', async () => {
      await store.sessions.ensure({ key: PARENT, agentId: 'support' }, 1000);
      await store.subagents.spawn(
        {
          id: 'c1',
          sessionKey: CHILD,
          parentSession: PARENT,
          rootSession: PARENT,
          agentId: 'support',
          depth: 1,
          role: 'leaf',
          label: 'helper',
          task: 'do it',
          correlationId: 'corr-1',
          firstRunId: 'run-c1',
          model: null,
          tools: ['time_now'],
          timeoutSeconds: 60,
          workdir: null,
          worktree: null,
        },
        input('in-task', 'spawn:c1'),
        2000,
      );
      const started = await store.runs.start(
        {
          id: 'run-1',
          sessionKey: CHILD,
          agentId: 'support',
          owner: 'gw-1',
          leaseTtlMs: 30_000,
          model: 'scripted/x',
          inputIds: ['in-task'],
          subagentId: 'c1',
        },
        3000,
      );
      if (typeof started === 'string') throw new Error(`the child's run did not start: ${started}`);

      const holder = new pg.Client({ connectionString: POSTGRES_URL });
      await holder.connect();
      try {
        await holder.query(`SET search_path = ${schema}`);
        await holder.query('BEGIN');
        await holder.query("SELECT id FROM subagents WHERE id = 'c1' FOR UPDATE");
        const committing = store.runs.commit(
          {
            runId: 'run-1',
            sessionKey: CHILD,
            epoch: started.epoch,
            outcome: {
              status: 'succeeded',
              usage: { inputTokens: 1, outputTokens: 1, modelCalls: 1, steps: 1 },
              preambleChars: 0,
              promptChars: 0,
              finalText: 'first answer',
              errorMessage: null,
            },
            transcript: [],
            consumedInputIds: ['in-task'],
            outbox: [],
            events: [],
            subagent: { id: 'c1', error: null, maxResultChars: 1000 },
          },
          4000,
        );
        // The commit waits on the held row (wherever it first needs it); the follow-up is stored meanwhile.
        await waitUntil('the commit waiting on a lock', async () => {
          const { rows } = await holder.query(
            `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
               AND wait_event_type = 'Lock'`,
          );
          return rows.length > 0 ? true : undefined;
        });
        await store.inputs.enqueue(input('in-followup', 'followup:c1:k1'), 4500);
        await holder.query('COMMIT');
        await committing;
      } finally {
        await holder.query('ROLLBACK').catch(() => {});
        await holder.end();
      }

      const queued = await store.inputs.listQueued(CHILD);
      expect(queued.map((queuedInput) => queuedInput.id)).toEqual(['in-followup']);
      // With an input still queued for it, the sub-agent is not finished: it waits, and its next run takes the input.
      expect(await store.subagents.get('c1')).toMatchObject({ state: 'running', waiting: true, completion: null });
    });
  });
} else {
  describe('sub-agent run commit against a follow-up on PostgreSQL', () => {
    it.skip(`no PostgreSQL server at ${POSTGRES_URL} (set SWITCHBOARD_TEST_POSTGRES, or run under CI=true to require one)`, () => {});
  });
}
