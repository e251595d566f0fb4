/** `switchboard outbox`: deliveries the gateway owes; retry or drop dead ones. */
import type { OutboxRecord } from '../ports/index.js';
import { ago, table } from './format.js';
import { program, client, parseLimit, withQuery, print } from './shared.js';

const outbox = program
  .command('outbox')
  .description('deliveries the gateway owes: replies, completions, push notifications; retry or drop dead ones');
outbox
  .command('list')
  .description('outbox rows, oldest first')
  .option('--status <status>', 'only rows in this state: pending, delivered, dead or dropped', 'dead')
  .option('--limit <n>', 'at most n', parseLimit)
  .action(async (options: { status: string; limit?: number }) => {
    const { rows } = await client().request<{ rows: OutboxRecord[] }>(
      'GET',
      withQuery('/v1/outbox', { status: options.status, limit: options.limit }),
    );
    print({ rows }, () =>
      rows.length === 0
        ? `(no ${options.status} rows)`
        : table(
            rows.map((row) => ({
              id: row.id,
              kind: row.kind,
              target: row.target,
              status: row.status,
              attempts: row.attempts,
              created: ago(row.createdAt),
              error: row.lastError ?? '',
            })),
            ['id', 'kind', 'target', 'status', 'attempts', 'created', 'error'],
          ),
    );
  });
for (const [action, description] of [
  ['retry', 'deliver a dead row again, from its first attempt'],
  ['drop', 'give up on a dead row for good (it stays listed as dropped)'],
] as const) {
  outbox
    .command(`${action} <id>`)
    .description(description)
    .action(async (id: string) => {
      const { row } = await client().request<{ row: OutboxRecord }>('POST', `/v1/outbox/${encodeURIComponent(id)}/${action}`);
      print({ row }, () => `${action === 'retry' ? 'retrying' : 'dropped'} ${row.kind} ${row.id} (to ${row.target})`);
    });
}
