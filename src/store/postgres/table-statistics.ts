/**
 * The store's tables analyzed when the server does not (`store.analyze`, docs/deploy.md). PostgreSQL plans a statement
 * from its tables' statistics, which ANALYZE gathers and autovacuum keeps current as rows change. With autovacuum off,
 * the store's tables are never analyzed: the plans that its prepared statements and functions keep are those made
 * while the tables were empty, and stay (a scan of every input to find one by id), so each message costs more the
 * more are stored. Where the server's autovacuum is off, this analyzes the store's own tables by autovacuum's default
 * rule, a table whose rows changed since its last analyze by more than 50 plus a tenth of its rows, at most once a
 * minute as autovacuum visits a database (its naptime); and at once, on the next pass, a table whose number of rows
 * moved by that much (a table that was empty when its plans were made). An ANALYZE makes every connection plan its
 * statements on that table again, so a table whose rows are updated in place (sessions, leases) is not taken on every
 * pass.
 */
import { sql, type Kysely } from 'kysely';
import { errorMessage } from '../../core/errors.js';
import type { Database } from '../schema/database.js';

/** autovacuum_analyze_threshold and autovacuum_analyze_scale_factor's defaults. */
const THRESHOLD = 50;
const SCALE = 0.1;
/** autovacuum_naptime's default: how often a table whose rows changed, but not their number, is analyzed. */
const NAPTIME_SECONDS = 60;

export type AnalyzeMode = 'auto' | 'off';

export class TableStatistics {
  private timer?: NodeJS.Timeout;
  private passing?: Promise<string[]>;
  private stopped = false;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly schema: string,
    /** A background pass that failed (the gateway logs it); the next pass tries again. */
    private readonly onError: (error: unknown) => void = () => {},
    private readonly intervalMs = 2_000,
    /** How long a table whose rows changed in place waits for its next analyze. */
    private readonly naptimeSeconds = NAPTIME_SECONDS,
  ) {}

  /** True when the server's autovacuum is off (or the statistics it would act on are not counted). */
  async serverLeavesItToUs(): Promise<boolean> {
    const { rows } = await sql<{ autovacuum: string; track_counts: string }>`
      SELECT current_setting('autovacuum') AS autovacuum, current_setting('track_counts') AS track_counts`.execute(this.db);
    return rows[0]!.autovacuum !== 'on' && rows[0]!.track_counts === 'on';
  }

  /** With `auto`, starts analyzing in the background when the server's autovacuum is off; answers whether it did. */
  async start(mode: AnalyzeMode): Promise<boolean> {
    if (mode === 'off' || !(await this.serverLeavesItToUs())) return false;
    // A pass still running when the store closes fails on the closed pool: that is not worth a warning.
    const failed = (error: unknown) => {
      if (this.stopped) return;
      this.onError(new Error(`analyzing the store's tables failed, tried again in ${this.intervalMs} ms: ${errorMessage(error)}`));
    };
    this.timer = setInterval(() => void this.pass().catch(failed), this.intervalMs);
    this.timer.unref();
    return true;
  }

  /** Whether passes run in the background (start found the server's autovacuum off). */
  get running(): boolean {
    return this.timer !== undefined && !this.stopped;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
  }

  /**
   * Analyzes the tables that changed enough, and answers their names. SKIP_LOCKED passes over a table that another
   * gateway is analyzing at that moment; its analyze resets the count, so the table is not taken twice.
   */
  pass(): Promise<string[]> {
    this.passing ??= this.analyzeChanged().finally(() => (this.passing = undefined));
    return this.passing;
  }

  private async analyzeChanged(): Promise<string[]> {
    // reltuples is the number of rows the last analyze counted (-1 before the first); the clock is the database's.
    const { rows } = await sql<{ relname: string }>`
      SELECT s.relname FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
      WHERE s.schemaname = ${this.schema}
        AND (abs(s.n_live_tup - greatest(c.reltuples, 0)) > ${sql.lit(THRESHOLD)} + ${sql.lit(SCALE)} * greatest(c.reltuples, 0)
          OR (s.n_mod_since_analyze > ${sql.lit(THRESHOLD)} + ${sql.lit(SCALE)} * s.n_live_tup
            AND coalesce(greatest(s.last_analyze, s.last_autoanalyze), '-infinity') < now() - make_interval(secs => ${sql.lit(this.naptimeSeconds)})))
      ORDER BY s.relname`.execute(this.db);
    for (const { relname } of rows) await sql`ANALYZE (SKIP_LOCKED) ${sql.id(this.schema, relname)}`.execute(this.db);
    return rows.map((row) => row.relname);
  }
}
