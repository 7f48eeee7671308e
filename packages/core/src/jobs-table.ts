import { AdvisoryLockError } from './errors.ts';
import { LockTableMissingError } from './job-errors.ts';
import type { BigintLockKey } from './lock-key.ts';
import { queryFailed } from './messages.ts';
import { SqlState, sqlStateOf } from './sql-state.ts';
import { type Statement, statementText } from './statement.ts';

/** The table behind `runOnce` and `leader`, found through the connection's `search_path`. */
export const JOBS_TABLE = 'pglock_jobs';

/**
 * The DDL of {@link JOBS_TABLE}: one row per job or leader name, keyed by the name's lock key. Run it
 * once per database (a migration); `pglock schema` prints it (with {@link JOBS_TABLE_UPGRADE_DDL}),
 * and docs/scheduling.md gives it as a Prisma model, a Drizzle table and a Kysely migration.
 *
 * @example
 * ```ts
 * import { JOBS_TABLE_DDL } from '@pglock/core';
 * import pg from 'pg';
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * await pool.query(JOBS_TABLE_DDL);
 * ```
 */
export const JOBS_TABLE_DDL = `CREATE TABLE IF NOT EXISTS pglock_jobs (
  key          bigint PRIMARY KEY,        -- lockKey(name, { namespace }): the advisory lock it guards
  name         text NOT NULL,
  namespace    text,
  per_ms       bigint,                    -- runOnce: the job's schedule (per, in ms); another per is refused
  period_start timestamptz,               -- runOnce: start of the last period whose run committed
  ran_at       timestamptz,               -- runOnce: when that run took the lock (server clock)
  term         bigint NOT NULL DEFAULT 0, -- leader: the last term elected, the fencing token
  elected_at   timestamptz,               -- leader: when that term began (server clock)
  run_ms       bigint,                    -- runOnce: how long the last recorded run took (ms)
  outcome      text,                      -- runOnce: how it ended: 'ok', 'failed' or 'timed-out'
  attempts     integer NOT NULL DEFAULT 0, -- runOnce: runs made in attempt_period (retry counts them)
  attempt_period timestamptz,             -- runOnce: the period those attempts were made in
  last_error   text                       -- runOnce: the last failed run's error (truncated)
);`;

/**
 * Upgrades a {@link JOBS_TABLE} created by an older pglock (before `per_ms`, where `runOnce` rejects
 * with `LockTableMissingError` naming this statement): it adds the column, and does nothing on a
 * table that has it. Rows already there keep working; each job's next run records its schedule.
 *
 * @example
 * ```ts
 * import { JOBS_TABLE_UPGRADE_DDL } from '@pglock/core';
 * import pg from 'pg';
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * await pool.query(JOBS_TABLE_UPGRADE_DDL); // once, in a migration, before deploying this version
 * ```
 */
export const JOBS_TABLE_UPGRADE_DDL = `ALTER TABLE pglock_jobs ADD COLUMN IF NOT EXISTS per_ms bigint,
  ADD COLUMN IF NOT EXISTS run_ms bigint, ADD COLUMN IF NOT EXISTS outcome text,
  ADD COLUMN IF NOT EXISTS attempts integer NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS attempt_period timestamptz, ADD COLUMN IF NOT EXISTS last_error text;`;

// The period is cut from now(), the start of the transaction the job runs in, so that now() and
// every DEFAULT now() the job writes fall inside its period, even when the claim comes after a
// period boundary the transaction began before (a wait for the lock, a nested call late in a
// long transaction). Epoch-aligned in UTC, in integer milliseconds. The claim writes the run's
// record in the caller's transaction only when no run of this period (or a later one) committed
// and the row records no other schedule (a row without one, from before per_ms, takes this one).
// It returns the period and the row's schedule either way, so one round trip says "claimed",
// "done" or "another schedule", and for which period. The subquery in the last SELECT sees the row
// as it was before this statement.
const claimText = statementText(
  `WITH p AS (SELECT $1::text::bigint AS per, $2::text::bigint AS key, floor(extract(epoch FROM now()) * 1000)::bigint AS ms),
  s AS (SELECT ms - ms % per AS start_ms, per, key FROM p),
  claimed AS (
    INSERT INTO pglock_jobs AS j (key, name, namespace, per_ms, period_start, ran_at)
    SELECT s.key, $3::text, nullif($4::text, ''), s.per, to_timestamp(s.start_ms / 1000.0), statement_timestamp() FROM s
    ON CONFLICT (key) DO UPDATE SET per_ms = excluded.per_ms, period_start = excluded.period_start, ran_at = excluded.ran_at
    WHERE (j.per_ms IS NULL OR j.per_ms = excluded.per_ms)
      AND (j.period_start IS NULL OR j.period_start < excluded.period_start)
    RETURNING 1
  )
  SELECT start_ms::text AS start, (start_ms + per)::text AS finish, (SELECT count(*) FROM claimed)::int AS claimed,
    (SELECT j.per_ms::text FROM pglock_jobs AS j WHERE j.key = s.key) AS stored
  FROM s`,
);

// now(): on the transaction a nested call runs in, the period its job would have run for; alone,
// the time of this statement.
const periodText = statementText(
  `SELECT start_ms::text AS start, (start_ms + per)::text AS finish, 0 AS claimed FROM (
    SELECT ms - ms % per AS start_ms, per FROM (
      SELECT $1::text::bigint AS per, floor(extract(epoch FROM now()) * 1000)::bigint AS ms) AS p) AS s`,
);

// Runs on the connection that holds the leader's session lock, so it can only take effect while
// that lock is held: a deposed leader's backend is gone before a standby can be elected.
const electText = statementText(
  `INSERT INTO pglock_jobs AS j (key, name, namespace, term, elected_at)
  VALUES ($1::text::bigint, $2::text, nullif($3::text, ''), 1, statement_timestamp())
  ON CONFLICT (key) DO UPDATE SET term = j.term + 1, elected_at = excluded.elected_at
  RETURNING j.term::text AS term`,
);

/** The values that name a job's row: its key, name and namespace (`''` for none). */
function rowValues(key: BigintLockKey): [string, string, string] {
  return [String(key.value), key.name ?? String(key.value), key.namespace ?? ''];
}

/** `runOnce`'s claim of the current period for `key`. */
export function claimStatement(key: BigintLockKey, perMs: number): Statement {
  return claimText.bind([String(perMs), ...rowValues(key)]);
}

/** The current period alone (no table), for a call that found the job busy. */
export function periodStatement(perMs: number): Statement {
  return periodText.bind([String(perMs)]);
}

/** `leader`'s election: the name's next term. */
export function electStatement(key: BigintLockKey): Statement {
  return electText.bind(rowValues(key));
}

/**
 * The error for a failed statement on the jobs table: `LockTableMissingError` when the table does not
 * exist (42P01, with the DDL) or lacks `per_ms` (42703, a table from an older pglock, with the upgrade);
 * either also aborts the transaction it ran in. Else `LockQueryError`.
 */
export function jobsTableError(
  error: unknown,
  key: BigintLockKey,
  verb: string,
  doing: string,
): AdvisoryLockError {
  if (AdvisoryLockError.is(error)) return error;
  const state = sqlStateOf(error);
  if (state === SqlState.undefinedTable) {
    return new LockTableMissingError(
      `${verb}: the table ${JOBS_TABLE} does not exist in this database (or not in the connection's search_path). ` +
        `${verb} keeps its state there; create it once, in a migration (\`pglock schema\` prints this DDL; docs/scheduling.md has it for Prisma, Drizzle and Kysely):\n\n${JOBS_TABLE_DDL}\n`,
      { keys: [key], cause: error, ddl: JOBS_TABLE_DDL },
    );
  }
  if (state === SqlState.undefinedColumn) {
    return new LockTableMissingError(
      `${verb}: the table ${JOBS_TABLE} has no column per_ms: it was created by an older pglock. ${verb} records each job's schedule there, to refuse a caller with another per. ` +
        `Upgrade the table once, in a migration (\`pglock schema\` prints it too; rows already there keep working; docs/scheduling.md has it for Prisma, Drizzle and Kysely):\n\n${JOBS_TABLE_UPGRADE_DDL}\n`,
      { keys: [key], cause: error, ddl: JOBS_TABLE_UPGRADE_DDL, column: 'per_ms' },
    );
  }
  return queryFailed({ keys: [key] }, verb, doing, error);
}
