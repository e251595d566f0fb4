/**
 * What a user builds in an afternoon from official parts (issue 30's second row): the SDK's DefaultRequestHandler with
 * its own DatabaseTaskStore on SQLite (WAL, synchronous=FULL), and an executor that makes one AI SDK generateText call
 * on a zero-latency mock model before it publishes the completed task. In a process of its own for the A2A benchmark.
 *
 * With SAME_ROWS_DB (a copy of a gateway's store after one real request), the executor also writes, in one transaction
 * of its own (WAL, synchronous=FULL) before it publishes, a copy of every row that request left: its session, lease,
 * input, run, transcript, journal and task events, into the same tables with the same indexes. That is the peer with
 * the rows behind Switchboard's guarantees, each written once, by prepared statements and with no query builder.
 */
import { join } from 'node:path';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import BetterSqlite3 from 'better-sqlite3';
import { generateText } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { DatabaseTaskStore } from '@a2a-js/sdk/server/database';
import { AgentEvent, type AgentExecutor, type ExecutionEventBus } from '@a2a-js/sdk/server';
import { TaskState } from '@a2a-js/sdk';
import { ReferenceExecutor, referenceServer } from '../test/helpers/a2a-reference.js';
import { requestRows } from './prefill.js';

const raw = new BetterSqlite3(join(mkdtempSync(join(tmpdir(), 'sb-durable-peer-')), 'tasks.db'));
raw.pragma('journal_mode = WAL');
raw.pragma('synchronous = FULL');
const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: raw }) });
await sql`CREATE TABLE tasks (tenant TEXT NOT NULL, owner TEXT NOT NULL, id TEXT NOT NULL, context_id TEXT NOT NULL,
  status_last_updated INTEGER NOT NULL, status_state TEXT, status TEXT, artifacts TEXT, history TEXT, metadata TEXT,
  protocol_version TEXT, PRIMARY KEY (tenant, owner, id))`.execute(db);
await sql`CREATE INDEX tasks_context ON tasks (tenant, owner, context_id)`.execute(db);

const sameRows = process.env.SAME_ROWS_DB ? sameRowsWriter(process.env.SAME_ROWS_DB) : undefined;

/** Writes copy n of the request's rows, committed with a sync, as its own transaction. */
function sameRowsWriter(path: string): (n: number) => void {
  const rowsDb = new BetterSqlite3(path);
  rowsDb.pragma('journal_mode = WAL');
  rowsDb.pragma('synchronous = FULL');
  const request = requestRows(rowsDb);
  return rowsDb.transaction((n: number) => request.copy(n));
}
let requests = 0;

const model = new MockLanguageModelV3({
  doGenerate: async () => ({
    content: [{ type: 'text', text: 'ok' }],
    finishReason: { unified: 'stop', raw: 'stop' },
    usage: { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } },
    warnings: [],
  }),
});

/** One model call, then the completed task, published once (as the peer does). */
class ModelExecutor extends ReferenceExecutor {
  override async execute(context: Parameters<AgentExecutor['execute']>[0], bus: ExecutionEventBus): Promise<void> {
    const { text: answer } = await generateText({ model, prompt: 'hi' });
    const said = context.userMessage.parts.map((part) => (part.content?.$case === 'text' ? part.content.value : '')).join('');
    sameRows?.((requests += 1));
    const part = { content: { $case: 'text' as const, value: `${answer}: ${said}` }, metadata: {}, filename: '', mediaType: 'text/plain' };
    bus.publish(
      AgentEvent.task({
        id: context.taskId,
        contextId: context.contextId,
        status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() },
        artifacts: [{ artifactId: 'a', name: 'answer', description: '', parts: [part], metadata: {}, extensions: [] }],
        history: [context.userMessage],
        metadata: {},
      }),
    );
    bus.finished();
  }
}

const { url } = await referenceServer(false, new ModelExecutor(), undefined, 0, new DatabaseTaskStore(db));
process.stdout.write(`${JSON.stringify({ url })}\n`);
