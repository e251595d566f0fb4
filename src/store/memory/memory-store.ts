/**
 * Agents' memory over Kysely (docs/memory.md): documents and chunks in portable tables, searched with each engine's
 * own full-text index (migrations/memory.ts): FTS5's bm25 on SQLite, `ts_rank_cd` over a `tsvector` on PostgreSQL.
 * A query is reduced to its words, joined with OR, so no input is a syntax error and every word counts for rank.
 */
import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import type { MemoryChunk, MemoryDocument, MemoryHit, MemoryScope, MemorySource, MemoryStore } from '../../ports/index.js';
import { num } from '../sql/rows.js';
import type { Database, MemoryDocsTable } from '../schema/database.js';
import type { SqlDialect } from '../sql/dialect.js';

/** The words of a query, at most 32 of them. */
export function queryWords(query: string): string[] {
  return (query.match(/[\p{L}\p{N}]+/gu) ?? []).slice(0, 32);
}

const escapeLike = (prefix: string) => `${prefix.replace(/[\\%_]/g, (match) => `\\${match}`)}%`;

function toDocument(row: Selectable<MemoryDocsTable>): MemoryDocument {
  return {
    agentId: row.agent_id,
    path: row.path,
    source: row.source as MemorySource,
    hash: row.hash,
    bytes: num(row.bytes),
    modifiedAt: num(row.modified_at),
    indexedAt: num(row.indexed_at),
  };
}

/** `(agent = a AND (path LIKE p1 OR ...)) OR ...`, on the chunk table `c`. */
function scopeFilter(scopes: readonly MemoryScope[]): RawBuilder<unknown> {
  const each = scopes.map((scope) => {
    const agent = sql`c.agent_id = ${scope.agentId}`;
    if (!scope.paths?.length) return agent;
    const paths = sql.join(
      scope.paths.map((prefix) => sql`c.path LIKE ${escapeLike(prefix)} ESCAPE '\\'`),
      sql` OR `,
    );
    return sql`(${agent} AND (${paths}))`;
  });
  return sql`(${sql.join(each, sql` OR `)})`;
}

export class KyselyMemoryStore implements MemoryStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: SqlDialect,
  ) {}

  async index(document: Omit<MemoryDocument, 'indexedAt'>, chunks: readonly MemoryChunk[], now: number): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const row = {
        agent_id: document.agentId,
        path: document.path,
        source: document.source,
        hash: document.hash,
        bytes: document.bytes,
        modified_at: document.modifiedAt,
        indexed_at: now,
      };
      // The document's row is the compare-and-set: it is written (and held to the commit) only when its hash
      // changes, so of two gateways indexing one file at once, one writes the chunks and the other finds it done.
      const changed = await trx
        .insertInto('memory_docs')
        .values(row)
        .onConflict((oc) =>
          oc
            .columns(['agent_id', 'path'])
            .doUpdateSet({ ...row })
            .where('memory_docs.hash', '<>', document.hash),
        )
        .returning('path')
        .executeTakeFirst();
      if (!changed) return false;
      await trx.deleteFrom('memory_chunks').where('agent_id', '=', document.agentId).where('path', '=', document.path).execute();
      await this.insertChunks(trx, document, chunks);
      return true;
    });
  }

  private async insertChunks(
    db: Kysely<Database>,
    { agentId, path, source, modifiedAt }: Pick<MemoryDocument, 'agentId' | 'path' | 'source' | 'modifiedAt'>,
    chunks: readonly MemoryChunk[],
  ) {
    for (let at = 0; at < chunks.length; at += 200) {
      const page = chunks.slice(at, at + 200).map((chunk) => ({
        agent_id: agentId,
        path,
        source,
        start_line: chunk.startLine,
        end_line: chunk.endLine,
        text: chunk.text,
        modified_at: modifiedAt,
      }));
      await db.insertInto('memory_chunks').values(page).execute();
    }
  }

  async remove(agentId: string, path: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('memory_chunks').where('agent_id', '=', agentId).where('path', '=', path).execute();
      await trx.deleteFrom('memory_docs').where('agent_id', '=', agentId).where('path', '=', path).execute();
    });
  }

  async documents(agentId: string, source?: MemorySource): Promise<MemoryDocument[]> {
    let query = this.db.selectFrom('memory_docs').selectAll().where('agent_id', '=', agentId);
    if (source) query = query.where('source', '=', source);
    return (await query.orderBy('path').execute()).map(toDocument);
  }

  async write(entry: {
    agentId: string;
    path: string;
    text: string;
    key: string;
    modifiedAt: number;
  }): Promise<{ path: string; created: boolean }> {
    return this.db.transaction().execute(async (trx) => {
      const inserted = await trx
        .insertInto('memory_docs')
        .values({
          agent_id: entry.agentId,
          path: entry.path,
          source: 'entry',
          hash: entry.key.slice(0, 64),
          bytes: Buffer.byteLength(entry.text),
          modified_at: entry.modifiedAt,
          indexed_at: entry.modifiedAt,
          idempotency_key: entry.key,
        })
        .onConflict((oc) => oc.column('idempotency_key').doNothing())
        .executeTakeFirst();
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 0) {
        const first = await trx.selectFrom('memory_docs').select('path').where('idempotency_key', '=', entry.key).executeTakeFirstOrThrow();
        return { path: first.path, created: false };
      }
      const lines = entry.text.split('\n').length;
      await this.insertChunks(trx, { ...entry, source: 'entry' }, [{ startLine: 1, endLine: lines, text: entry.text }]);
      return { path: entry.path, created: true };
    });
  }

  async search(query: string, scopes: readonly MemoryScope[], limit: number): Promise<MemoryHit[]> {
    const words = queryWords(query);
    if (words.length === 0 || scopes.length === 0) return [];
    const rows = await this.dialect.searchMemory(this.db, words, scopeFilter(scopes), limit);
    return rows.map((row) => ({
      agentId: row.agent_id,
      path: row.path,
      source: row.source as MemorySource,
      startLine: num(row.start_line),
      endLine: num(row.end_line),
      text: row.text,
      modifiedAt: num(row.modified_at),
      score: Number(row.score),
    }));
  }

  async read(agentId: string, path: string): Promise<{ document: MemoryDocument; chunks: MemoryChunk[] } | undefined> {
    const document = await this.db
      .selectFrom('memory_docs')
      .selectAll()
      .where('agent_id', '=', agentId)
      .where('path', '=', path)
      .executeTakeFirst();
    if (!document) return undefined;
    const chunks = await this.db
      .selectFrom('memory_chunks')
      .select(['start_line', 'end_line', 'text'])
      .where('agent_id', '=', agentId)
      .where('path', '=', path)
      .orderBy('start_line')
      .execute();
    return {
      document: toDocument(document),
      chunks: chunks.map((chunk) => ({ startLine: num(chunk.start_line), endLine: num(chunk.end_line), text: chunk.text })),
    };
  }

  async stats(): Promise<{ agentId: string; source: MemorySource; documents: number; chunks: number }[]> {
    const rows = await sql<{ agent_id: string; source: string; documents: number; chunks: number }>`
      SELECT d.agent_id, d.source, count(DISTINCT d.path) AS documents, count(c.seq) AS chunks
      FROM memory_docs d LEFT JOIN memory_chunks c ON c.agent_id = d.agent_id AND c.path = d.path
      GROUP BY d.agent_id, d.source ORDER BY d.agent_id, d.source`.execute(this.db);
    return rows.rows.map((row) => ({
      agentId: row.agent_id,
      source: row.source as MemorySource,
      documents: Number(row.documents),
      chunks: Number(row.chunks),
    }));
  }
}
