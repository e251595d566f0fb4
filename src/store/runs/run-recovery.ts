/**
 * Crash recovery and takeover of runs (ARCHITECTURE.md section 4.4, docs/deploy.md "Takeover"). A run is an orphan
 * when nothing holds it any more: its owner's process is gone (a restart finds its own), or its lease expired or
 * moved on (any gateway finds those, judged by the database clock). Each orphan is recovered in a transaction of its
 * own, as a compare-and-set: its lease is taken and let go at once (the epoch grows, so the run's owner, should it
 * still live, is fenced off), then the run is marked interrupted only while it is still `running`, and only then are
 * its claimed inputs queued again (or dropped once their retries are spent).
 *
 * A run that committed a step is `suspended` instead (ARCHITECTURE.md 4.7): its inputs are queued again still naming
 * it, so that the session's next run resumes it from its last step under its own id. An attempt that committed a step
 * made progress and spends no retry; one that committed none counts against `maxRetries` as a plain run does.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { OrphanRecovery, RecoveryReport } from '../../ports/index.js';
import { num, type Db } from '../sql/rows.js';
import { appendEvent } from '../sql/writes.js';
import type { Database } from '../schema/database.js';
import type { SqlDialect } from '../sql/dialect.js';

/** How many orphans one call recovers; a sweep that finds more comes back for the rest. */
const BATCH = 100;

interface Orphan {
  id: string;
  session_key: string;
  owner: string;
  epoch: number;
  attempt: number;
}

export function emptyRecovery(): RecoveryReport {
  return { interruptedRuns: [], suspendedRuns: [], requeuedInputs: [], droppedInputs: [], sessionKeys: [] };
}

/**
 * The candidates: the owner's own running runs, or every running run whose session's lease is not held at the
 * run's epoch (gone, expired, or taken by a later epoch). The transaction of each one decides again.
 */
function findOrphans(db: Kysely<Database>, dbNowMs: () => RawBuilder<number>, recovery: OrphanRecovery): Promise<Orphan[]> {
  const running = db
    .selectFrom('runs')
    .select(['runs.id', 'runs.session_key', 'runs.owner', 'runs.epoch', 'runs.attempt'])
    .where('runs.status', '=', 'running');
  if (recovery.scope === 'own') return running.where('runs.owner', '=', recovery.recoverer).limit(BATCH).execute();
  return running
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('session_lease')
            .select('session_lease.epoch')
            .whereRef('session_lease.session_key', '=', 'runs.session_key')
            .whereRef('session_lease.epoch', '=', 'runs.epoch')
            .where('session_lease.expires_at', '>=', dbNowMs()),
        ),
      ),
    )
    .limit(BATCH)
    .execute();
}

/**
 * Fences the orphan's owner off: the lease at the run's epoch (the owner's own, or one that expired) is taken by the
 * recoverer and let go in one statement, its epoch grown. `held` when the lease was renewed meanwhile (its owner
 * lives: the run is not an orphan), `taken` when this took it, `moved` when a later epoch holds the session already.
 */
async function fence(
  trx: Db,
  dbNowMs: () => RawBuilder<number>,
  recovery: OrphanRecovery,
  orphan: Orphan,
): Promise<'taken' | 'moved' | 'held'> {
  let update = trx
    .updateTable('session_lease')
    .set({ owner: recovery.recoverer, epoch: sql<number>`epoch + 1`, expires_at: 0 })
    .where('session_key', '=', orphan.session_key)
    .where('epoch', '=', orphan.epoch);
  if (recovery.scope === 'expired') update = update.where('expires_at', '<', dbNowMs());
  if ((await update.returning('epoch').execute()).length === 1) return 'taken';
  const lease = await trx.selectFrom('session_lease').select('epoch').where('session_key', '=', orphan.session_key).executeTakeFirst();
  return lease && num(lease.epoch) === num(orphan.epoch) ? 'held' : 'moved';
}

async function recoverOne(
  trx: Db,
  dialect: SqlDialect,
  dbNowMs: () => RawBuilder<number>,
  recovery: OrphanRecovery,
  orphan: Orphan,
  now: number,
  report: RecoveryReport,
): Promise<void> {
  // The run was last known alive when its lease last ran out: it ends there, not when a gateway came back to find it,
  // so that the time a gateway was down is not counted in it (beyond one lease lifetime at most).
  const lease = await trx
    .selectFrom('session_lease')
    .select(['epoch', 'expires_at'])
    .where('session_key', '=', orphan.session_key)
    .executeTakeFirst();
  const endedAt = lease && num(lease.epoch) === num(orphan.epoch) ? Math.min(now, num(lease.expires_at)) : now;
  const fenced = await fence(trx, dbNowMs, recovery, orphan);
  if (fenced === 'held') return;
  // The run's row is held before its steps are read: a step the owner is committing (its fence holds this row, see
  // steps/step-store.ts) is then either in the read, and the run suspended, or refused once this commits. Read first,
  // a step committed between the read and the compare-and-set below would be left on an interrupted run.
  await dialect.lockRows(trx.selectFrom('runs').select('id').where('id', '=', orphan.id)).execute();
  const diagnostic = recovery.diagnostic(orphan.owner);
  const inputs = await trx.selectFrom('inputs').selectAll().where('run_id', '=', orphan.id).where('status', '=', 'claimed').execute();
  const steps = await trx.selectFrom('run_steps').select('attempt').where('run_id', '=', orphan.id).execute();
  const progressed = steps.some((step) => num(step.attempt) === num(orphan.attempt));
  const spent = (attempts: number) => !progressed && attempts > recovery.maxRetries;
  // A run resumes only whole: with an input of it spent, it is interrupted, and each input judged on its own.
  const suspend = steps.length > 0 && inputs.length > 0 && !inputs.some((input) => spent(num(input.attempts)));
  // The compare-and-set: of two gateways recovering the same run, one finds it running.
  const recovered = await trx
    .updateTable('runs')
    .set({ status: suspend ? 'suspended' : 'interrupted', ended_at: endedAt, error_code: 'INTERRUPTED', error_message: diagnostic })
    .where('id', '=', orphan.id)
    .where('status', '=', 'running')
    .returning('id')
    .execute();
  if (recovered.length === 0) return;
  // A session another run holds now stays as that run has it.
  if (fenced === 'taken')
    await trx.updateTable('sessions').set({ state: 'idle', updated_at: now }).where('key', '=', orphan.session_key).execute();
  for (const input of inputs) {
    const exhausted = !suspend && num(input.attempts) > recovery.maxRetries;
    await trx
      .updateTable('inputs')
      .set({
        status: exhausted ? 'dropped' : 'queued',
        // A suspended run's inputs keep naming it: the session's next run resumes it.
        run_id: exhausted || suspend ? orphan.id : null,
        // An attempt that committed a step made progress: the next one starts the count again.
        ...(suspend && progressed ? { attempts: 0 } : {}),
        // A suspended run's inputs keep their notes: the model reads them, and the resumed run must read what it read.
        ...(suspend
          ? {}
          : {
              note: exhausted
                ? `dropped after ${num(input.attempts)} interrupted attempts (recovery.retryInterrupted = ${recovery.maxRetries})`
                : `previous attempt was interrupted: ${diagnostic}`,
            }),
        updated_at: now,
      })
      .where('id', '=', input.id)
      .where('status', '=', 'claimed')
      .execute();
    (exhausted ? report.droppedInputs : report.requeuedInputs).push(input.id);
  }
  (suspend ? report.suspendedRuns : report.interruptedRuns).push(orphan.id);
  report.sessionKeys.push(orphan.session_key);
  await appendEvent(
    trx,
    {
      type: suspend ? 'run.suspended' : 'run.interrupted',
      sessionKey: orphan.session_key,
      runId: orphan.id,
      payload: {
        diagnostic,
        owner: orphan.owner,
        recoveredBy: recovery.recoverer,
        inputIds: inputs.map((input) => input.id),
        ...(suspend ? { attempt: num(orphan.attempt), committedSteps: steps.length } : {}),
      },
    },
    now,
  );
}

/** PostgreSQL's lock_not_available: a lock_timeout ran out. */
const LOCK_NOT_AVAILABLE = '55P03';

export async function recoverOrphans(
  db: Kysely<Database>,
  dialect: SqlDialect,
  dbNowMs: () => RawBuilder<number>,
  recovery: OrphanRecovery,
  now: number,
): Promise<RecoveryReport> {
  const report = emptyRecovery();
  for (const orphan of await findOrphans(db, dbNowMs, recovery)) {
    // One transaction a run: a report lists only what committed.
    const one = emptyRecovery();
    try {
      await db.transaction().execute(async (trx) => {
        // A row another transaction holds (its owner hangs mid-commit, until PostgreSQL ends that transaction) is
        // left for the next sweep, instead of holding up this one's other orphans.
        await dialect.limitLockWait(trx, 500);
        await recoverOne(trx, dialect, dbNowMs, recovery, orphan, now, one);
      });
    } catch (error) {
      if ((error as { code?: string }).code === LOCK_NOT_AVAILABLE) continue;
      throw error;
    }
    for (const key of Object.keys(report) as (keyof RecoveryReport)[]) report[key].push(...one[key]);
  }
  report.sessionKeys = [...new Set(report.sessionKeys)];
  return report;
}
