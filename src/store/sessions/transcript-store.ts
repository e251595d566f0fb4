/** A session's transcript (the transcript store port) over Kysely. */
import type { Kysely, Selectable, SelectQueryBuilder } from 'kysely';
import type { NewTranscriptEntry, TranscriptEntry, TranscriptStore } from '../../ports/index.js';
import { prepared } from '../sql/prepared.js';
import { toTranscript } from '../sql/rows.js';
import { appendTranscript } from '../sql/writes.js';
import type { Database, TranscriptTable } from '../schema/database.js';

const transcriptTail = prepared<'sessionKey' | 'limit', Selectable<TranscriptTable>>((db, param) =>
  db.selectFrom('transcript').selectAll().where('session_key', '=', param('sessionKey')).orderBy('seq', 'desc').limit(param('limit')),
);

type TranscriptQuery = SelectQueryBuilder<Database, 'transcript', Selectable<TranscriptTable>>;

export class KyselyTranscriptStore implements TranscriptStore {
  constructor(private readonly db: Kysely<Database>) {}

  /** The session's entries after `seq`, oldest first. */
  listAfter(sessionKey: string, seq: number): Promise<TranscriptEntry[]> {
    return this.entries(sessionKey, (query) => query.where('seq', '>', seq));
  }

  async list(sessionKey: string, options: { limit?: number } = {}): Promise<TranscriptEntry[]> {
    // The history a run reads: the session's newest `limit` entries.
    const rows =
      options.limit === undefined
        ? await this.db.selectFrom('transcript').selectAll().where('session_key', '=', sessionKey).orderBy('seq', 'desc').execute()
        : await transcriptTail(this.db, { sessionKey, limit: options.limit });
    return rows.reverse().map(toTranscript);
  }

  listByRun(sessionKey: string, runId: string): Promise<TranscriptEntry[]> {
    return this.entries(sessionKey, (query) => query.where('run_id', '=', runId));
  }

  /** The session's entries that `narrow` keeps, oldest first. */
  private async entries(sessionKey: string, narrow: (query: TranscriptQuery) => TranscriptQuery): Promise<TranscriptEntry[]> {
    const rows = await narrow(this.db.selectFrom('transcript').selectAll().where('session_key', '=', sessionKey))
      .orderBy('seq')
      .execute();
    return rows.map(toTranscript);
  }

  async append(sessionKey: string, entries: NewTranscriptEntry[], now: number): Promise<void> {
    await appendTranscript(this.db, sessionKey, entries, now);
  }
}
