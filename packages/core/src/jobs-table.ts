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
  key            bigint PRIMARY KEY,           -- lockKey(name, { namespace }): the advisory lock it guards
  name           text NOT NULL,
  namespace      text,
  per_ms         bigint,                       -- runOnce: the job's schedule (per, in ms); NULL for cron
  cron           text,                         -- runOnce: the job's cron expression; NULL for per
  time_zone      text,                         -- runOnce: the IANA time zone of cron (UTC by default)
  period_start   timestamptz,                  -- runOnce: start of the last period whose run committed
  period_end     timestamptz,                  -- runOnce: end of that period: the next period is due then
  ran_at         timestamptz,                  -- runOnce: when that run took the lock (server clock)
  run_ms         bigint,                       -- runOnce: how long the last run took, in ms
  outcome        text,                         -- runOnce: how the last run ended: 'ok', 'failed' or 'timed-out'
  attempts       integer NOT NULL DEFAULT 0,   -- runOnce: runs tried in attempt_period (retry)
  attempt_period timestamptz,                  -- runOnce: the period attempts counts for
  last_error     text,                         -- runOnce: the message of the last failed attempt
  term           bigint NOT NULL DEFAULT 0,    -- leader: the last term elected, the fencing token
  elected_at     timestamptz,                  -- leader: when that term began (server clock)
  identity       text                          -- leader: who leads (leader's identity option)
);`;

/**
 * The columns an older {@link JOBS_TABLE} may lack, in the order they were added, each with its type
 * as {@link JOBS_TABLE_DDL} declares it. The upgrade adds each one that is missing.
 */
const UPGRADE_COLUMNS = [
  ['per_ms', 'bigint'],
  ['cron', 'text'],
  ['time_zone', 'text'],
  ['period_end', 'timestamptz'],
  ['run_ms', 'bigint'],
  ['outcome', 'text'],
  ['attempts', 'integer NOT NULL DEFAULT 0'],
  ['attempt_period', 'timestamptz'],
  ['last_error', 'text'],
  ['identity', 'text'],
] as const;

/**
 * Upgrades a {@link JOBS_TABLE} created by any older pglock (before `per_ms`, before `cron`…, where
 * `runOnce` rejects with `LockTableMissingError` naming the missing column and this statement) to
 * this version's columns: one `ALTER TABLE` adding each column it lacks, a no-op on a table that
 * has them all. Every column is nullable or has a constant default, so no row is rewritten and rows
 * already there keep working: each job's next run records its schedule.
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
export const JOBS_TABLE_UPGRADE_DDL = `ALTER TABLE pglock_jobs
${UPGRADE_COLUMNS.map(([column, type]) => `  ADD COLUMN IF NOT EXISTS ${column} ${type}`).join(',\n')};`;

// The claim of one run, in one round trip. The period is cut from now(), the start of the
// transaction the job runs in, so that now() and every DEFAULT now() the job writes fall inside its
// period, even when the claim comes after a period boundary the transaction began before (a wait for
// the lock, a nested call late in a long transaction). For per it is cut here, epoch-aligned in UTC,
// in integer milliseconds; for cron the caller cut it in JS from this transaction's now() (read
// first) and passes its bounds (the period, and the start of the one before it). With catchUp
// 'last', a row whose last run is older than the period before the current one gets that period
// instead. The claim writes the run's record in the caller's transaction only when no run of the
// period (or a later one) committed, the row records no other schedule (a row without one takes
// this one), and minIntervalMs has passed since the last run took the lock. It returns the period
// and the row as it was (its schedule, its last period) either way, so one round trip says
// "claimed", "done", "too soon" or "another schedule", and for which period: the final SELECT sees
// the row as it was before this statement. A claim also returns what its run reads next (the
// attempts this period has had, from the row as claimed, which the claim leaves alone; the server's
// clock; the backend and its transaction: job-run.ts), so a run needs no statement of its own for
// them. The attempt columns are read through the claimed row's JSON, not by name: on a table from an
// older pglock (without them) the claim answers as before, with `known` false, and the run reads them
// by name, failing there with the upgrade, as it always did. Values are strings ('' for none): see statement.ts.
const claimText = statementText(
  `WITH p AS (
    SELECT $1::text::bigint AS key, $2::text AS name, nullif($3::text, '') AS namespace,
      nullif($4::text, '')::bigint AS per, nullif($5::text, '') AS cron, nullif($6::text, '') AS zone,
      nullif($7::text, '')::bigint AS gstart, nullif($8::text, '')::bigint AS gend, nullif($9::text, '')::bigint AS gbefore,
      nullif($10::text, '')::bigint AS gap, $11::text = 'last' AS catchup,
      floor(extract(epoch FROM now()) * 1000)::bigint AS ms),
  c AS (
    SELECT p.*, coalesce(gstart, ms - ms % per) AS cur, coalesce(gend, ms - ms % per + per) AS nxt,
      coalesce(gbefore, ms - ms % per - per) AS before,
      (SELECT floor(extract(epoch FROM j.period_start) * 1000)::bigint FROM pglock_jobs AS j WHERE j.key = p.key) AS prev
    FROM p),
  s AS (
    SELECT c.*, CASE WHEN catchup AND prev < before THEN before ELSE cur END AS start_ms,
      CASE WHEN catchup AND prev < before THEN cur ELSE nxt END AS end_ms
    FROM c),
  claimed AS (
    INSERT INTO pglock_jobs AS j (key, name, namespace, per_ms, cron, time_zone, period_start, period_end, ran_at)
    SELECT s.key, s.name, s.namespace, s.per, s.cron, s.zone, to_timestamp(s.start_ms / 1000.0),
      to_timestamp(s.end_ms / 1000.0), statement_timestamp() FROM s
    ON CONFLICT (key) DO UPDATE SET per_ms = excluded.per_ms, cron = excluded.cron, time_zone = excluded.time_zone,
      period_start = excluded.period_start, period_end = excluded.period_end, ran_at = excluded.ran_at
    WHERE ((j.per_ms IS NULL AND j.cron IS NULL)
        OR (j.per_ms IS NOT DISTINCT FROM excluded.per_ms AND j.cron IS NOT DISTINCT FROM excluded.cron
          AND j.time_zone IS NOT DISTINCT FROM excluded.time_zone))
      AND (j.period_start IS NULL OR j.period_start < excluded.period_start)
      AND (j.ran_at IS NULL OR (SELECT gap FROM p) IS NULL
        OR j.ran_at <= excluded.ran_at - (SELECT gap FROM p) * interval '1 millisecond')
    RETURNING to_jsonb(j) AS doc
  )
  SELECT s.start_ms::text AS start, s.end_ms::text AS finish, (SELECT count(*) FROM claimed)::int AS claimed,
    s.prev::text AS prev, j.per_ms::text AS stored, j.cron AS storedcron, j.time_zone AS storedzone,
    r.known, CASE WHEN r.known AND floor(extract(epoch FROM (r.doc->>'attempt_period')::timestamptz) * 1000)::bigint = s.start_ms
      THEN (r.doc->>'attempts')::int ELSE 0 END AS attempts,
    floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint::text AS clock,
    pg_backend_pid() AS pid, extract(epoch FROM now())::text AS xact
  FROM s LEFT JOIN pglock_jobs AS j ON j.key = s.key
    CROSS JOIN LATERAL (SELECT (SELECT c.doc FROM claimed AS c) AS doc) AS q
    CROSS JOIN LATERAL (SELECT q.doc, coalesce((q.doc -> 'attempts') IS NOT NULL
      AND (q.doc -> 'attempt_period') IS NOT NULL, false) AS known) AS r`,
);

// now(): on the transaction a nested call runs in, the period its job would have run for; alone,
// the time of this statement.
const periodText = statementText(
  `SELECT start_ms::text AS start, (start_ms + per)::text AS finish, 0 AS claimed FROM (
    SELECT ms - ms % per AS start_ms, per FROM (
      SELECT $1::text::bigint AS per, floor(extract(epoch FROM now()) * 1000)::bigint AS ms) AS p) AS s`,
);

// The transaction's now() in integer epoch milliseconds, for a cron schedule's period (cut in JS).
const nowText = statementText('SELECT floor(extract(epoch FROM now()) * 1000)::bigint::text AS ms');

// Runs on the connection that holds the leader's session lock, so it can only take effect while
// that lock is held: a deposed leader's backend is gone before a standby can be elected. The term's
// identity is written in the same statement, so a reader never sees a term with its predecessor's.
const electText = statementText(
  `INSERT INTO pglock_jobs AS j (key, name, namespace, term, elected_at, identity)
  VALUES ($1::text::bigint, $2::text, nullif($3::text, ''), 1, statement_timestamp(), $4::text)
  ON CONFLICT (key) DO UPDATE SET term = j.term + 1, elected_at = excluded.elected_at, identity = excluded.identity
  RETURNING j.term::text AS term`,
);

// The election on a table from before `identity` (the upgrade adds it): the term alone.
const electWithoutIdentityText = statementText(
  `INSERT INTO pglock_jobs AS j (key, name, namespace, term, elected_at)
  VALUES ($1::text::bigint, $2::text, nullif($3::text, ''), 1, statement_timestamp())
  ON CONFLICT (key) DO UPDATE SET term = j.term + 1, elected_at = excluded.elected_at
  RETURNING j.term::text AS term`,
);

/** The values that name a job's row: its key, name and namespace (`''` for none). */
function rowValues(key: BigintLockKey): [string, string, string] {
  return [String(key.value), key.name ?? String(key.value), key.namespace ?? ''];
}

/** What a claim asks for, beside the job's row: its schedule, and the run limits it checks. */
export interface ClaimRequest {
  /** `per`, in ms; `undefined` for a cron schedule. */
  readonly perMs?: number | undefined;
  /** A cron schedule, with the bounds of the period cut from the transaction's `now()` (epoch ms). */
  readonly cron?:
    | {
        readonly expression: string;
        readonly timeZone: string;
        /** The current period, `[start, end)`, and the start of the period before it. */
        readonly start: number;
        readonly end: number;
        readonly before: number;
      }
    | undefined;
  /** `minIntervalMs` (`0`: none). */
  readonly minIntervalMs: number;
  readonly catchUp: 'none' | 'last';
}

/** `runOnce`'s claim of the current period (or, catching up, the one before it) for `key`. */
export function claimStatement(key: BigintLockKey, request: ClaimRequest): Statement {
  const { cron } = request;
  return claimText.bind([
    ...rowValues(key),
    request.perMs === undefined ? '' : String(request.perMs),
    cron?.expression ?? '',
    cron?.timeZone ?? '',
    cron === undefined ? '' : String(cron.start),
    cron === undefined ? '' : String(cron.end),
    cron === undefined ? '' : String(cron.before),
    request.minIntervalMs > 0 ? String(request.minIntervalMs) : '',
    request.catchUp,
  ]);
}

/** The transaction's `now()` (column `ms`, epoch milliseconds as text), for a cron schedule. */
export function nowStatement(): Statement {
  return nowText.bind([]);
}

/** The current period alone (no table), for a call that found the job busy. */
export function periodStatement(perMs: number): Statement {
  return periodText.bind([String(perMs)]);
}

/** `leader`'s election: the name's next term, led by `identity` (none: a table from before `identity`). */
export function electStatement(key: BigintLockKey, identity?: string): Statement {
  return identity === undefined
    ? electWithoutIdentityText.bind(rowValues(key))
    : electText.bind([...rowValues(key), identity]);
}

/**
 * The error for a failed statement on the jobs table: `LockTableMissingError` when the table does not
 * exist (42P01, with the DDL) or lacks a column (42703, a table from an older pglock: the error names
 * the column the server named, and gives the upgrade); either also aborts the transaction it ran in.
 * Else `LockQueryError`.
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
    const column = missingColumnOf(error);
    return new LockTableMissingError(
      `${verb}: the table ${JOBS_TABLE} has no column ${column ?? 'this version needs'}: it was created by an older pglock. ` +
        `Upgrade the table once, in a migration: the statement below adds every column it lacks, and does nothing to one it has (\`pglock schema\` prints it too; rows already there keep working; docs/scheduling.md has it for Prisma, Drizzle and Kysely):\n\n${JOBS_TABLE_UPGRADE_DDL}\n`,
      { keys: [key], cause: error, ddl: JOBS_TABLE_UPGRADE_DDL, column },
    );
  }
  return queryFailed({ keys: [key] }, verb, doing, error);
}

// PostgreSQL says `column "cron" of relation "pglock_jobs" does not exist` (an INSERT's column list)
// or `column j.cron does not exist` (a reference); an ORM may wrap the driver's error (cause, Prisma's
// meta.driverAdapterError), so the messages are read a few levels down.
const MISSING_COLUMN = /column "?(?:\w+\.)?(\w+)"? (?:of relation "?\w+"? )?does not exist/;
const KNOWN_COLUMNS: readonly string[] = UPGRADE_COLUMNS.map(([column]) => column);

/** The column of the jobs table a 42703 error names, when it is one an upgrade adds. */
function missingColumnOf(error: unknown, depth = 0): string | undefined {
  if (typeof error !== 'object' || error === null || depth > 5) return undefined;
  const candidate = error as {
    message?: unknown;
    originalMessage?: unknown;
    cause?: unknown;
    meta?: { driverAdapterError?: unknown };
  };
  for (const text of [candidate.originalMessage, candidate.message]) {
    const found = typeof text === 'string' ? MISSING_COLUMN.exec(text)?.[1] : undefined;
    if (found !== undefined && KNOWN_COLUMNS.includes(found)) return found;
  }
  return (
    missingColumnOf(candidate.meta?.driverAdapterError, depth + 1) ??
    missingColumnOf(candidate.cause, depth + 1)
  );
}
