/** `switchboard exchanges`: agent-to-agent messages (sessions_send), their replies, turns and announce steps. */
import type { ExchangeRecord, InputRecord } from '../ports/index.js';
import { ago, table } from './format.js';
import { program, client, parseLimit, withQuery, print } from './shared.js';

const exchanges = program
  .command('exchanges')
  .description('agent-to-agent messages (sessions_send): request, reply, ping-pong turns, announce');
exchanges
  .command('list')
  .description('exchanges, oldest first')
  .option('--session <key>', 'only exchanges this session sent or received')
  .option('--limit <n>', 'at most the n newest', parseLimit)
  .action(async (options: { session?: string; limit?: number }) => {
    const { exchanges: rows } = await client().request<{ exchanges: ExchangeRecord[] }>(
      'GET',
      withQuery('/v1/exchanges', { sessionKey: options.session, limit: options.limit }),
    );
    print({ exchanges: rows }, () =>
      table(
        rows.map((row) => ({
          id: row.id,
          from: row.requesterSession,
          to: row.targetSession,
          phase: row.phase,
          turn: `${row.turn}/${row.maxTurns}`,
          reply: row.replyState,
          created: ago(row.createdAt),
        })),
        ['id', 'from', 'to', 'phase', 'turn', 'reply', 'created'],
      ),
    );
  });
exchanges
  .command('show <id>')
  .description('one exchange (by id or a unique prefix of it): its state, reply and the messages of each step')
  .action(async (id: string) => {
    const shown = await client().request<{ exchange: ExchangeRecord; inputs: InputRecord[] }>(
      'GET',
      `/v1/exchanges/${encodeURIComponent(id)}`,
    );
    const { exchange } = shown;
    print(shown, () =>
      [
        `exchange ${exchange.id} (conversation ${exchange.conversationId}, hop ${exchange.hop})`,
        `  from:     ${exchange.requesterSession} (agent ${exchange.requesterAgent})`,
        `  to:       ${exchange.targetSession} (agent ${exchange.targetAgent})`,
        `  phase:    ${exchange.phase}, turn ${exchange.turn} of at most ${exchange.maxTurns}`,
        `  reply:    ${exchange.replyState}${exchange.replyRunId ? ` (run ${exchange.replyRunId}, ${exchange.replyStatus})` : ''}`,
        `  text:     ${exchange.replyText ?? '-'}`,
        `  created ${ago(exchange.createdAt)}, updated ${ago(exchange.updatedAt)}`,
        'steps:',
        table(
          shown.inputs.map((input) => ({
            step: input.provenance.exchange?.step ?? '-',
            turn: input.provenance.exchange?.turn ?? null,
            session: input.sessionKey,
            input: input.id,
            status: input.status,
            run: input.runId,
          })),
          ['step', 'turn', 'session', 'input', 'status', 'run'],
        ),
      ].join('\n'),
    );
  });
