/**
 * Inputs on PostgreSQL: an input that opens its session is accepted in one round trip, through migration 0021's
 * sb_enqueue_opening (postgres/migrations.ts), which writes what the portable path writes and reads the session's
 * queue after it. Every commit here is synchronous, so an unsynced accept is as durable as any other.
 */
import { sql, type Kysely, type Selectable } from 'kysely';
import type { NewInput, OpenedInput, SessionOpening } from '../../ports/index.js';
import type { InputFastPaths } from '../sessions/input-store.js';
import { json, toInput } from '../sql/rows.js';
import { withSender } from '../../kit/trace-context.js';
import type { Database, InputsTable } from '../schema/database.js';

export class PostgresInputPaths implements InputFastPaths {
  constructor(private readonly db: Kysely<Database>) {}

  async enqueueOpening(
    session: SessionOpening,
    input: NewInput,
    now: number,
    options: { planHead?: number } = {},
  ): Promise<OpenedInput | 'missing'> {
    const route = session.route ? json(session.route) : null;
    const { rows } = await sql<{
      answer:
        | { status: 'missing' }
        | { status: 'created' | 'existing'; input: Selectable<InputsTable>; queued?: Selectable<InputsTable>[] | null };
    }>`SELECT sb_enqueue_opening(${session.key}, ${session.agentId}, ${route}, ${session.create}, ${input.id},
      ${input.idempotencyKey}, ${input.mode}, ${input.text}, ${json(withSender(input.provenance))}, ${now},
      ${options.planHead ?? null}::integer) AS answer`.execute(this.db);
    const { answer } = rows[0]!;
    if (answer.status === 'missing') return 'missing';
    const opened = { input: toInput(answer.input), created: answer.status === 'created' };
    return answer.queued ? { ...opened, queued: answer.queued.map(toInput) } : opened;
  }
}
