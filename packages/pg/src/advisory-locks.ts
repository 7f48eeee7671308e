import type * as core from '@pglock/core';
import { createAdvisoryLocks, lockFunctions } from '@pglock/core/adapter';
import { pgPort } from './pg-port.ts';
import type { ClientOf, PgClientLike, PgPoolLike, PgQueryable, PgTransactionClient } from './pg-types.ts';

type Target = core.LockTarget;
type Options = core.LockOptions;
type SessionOptions = core.SessionLockOptions;
type Settings = PgTransactionSettings;
type Pool = PgPoolLike;
type Tx = PgTransactionClient;
type Context = core.RunOnceContext;

/** The transaction settings node-postgres's `BEGIN` takes. */
export type PgTransactionSettings = Omit<core.TransactionSettings, 'timeout' | 'maxWait'>;

/** Options of `withLock` / `tryWithLock` on node-postgres. */
export type PgWithLockOptions = core.WithLockOptions<Settings>;

/** Options of `runOnce` on node-postgres. */
export type PgRunOnceOptions = core.RunOnceOptions<Settings>;

/** The verbs bound to one pool (session locks included) or one client. */
export type PgAdvisoryLocks<C extends PgClientLike = PgClientLike> = core.AdvisoryLocks<C, Tx, Settings> &
  core.SessionAdvisoryLocks;

const functions = lockFunctions<PgQueryable, PgClientLike, Tx, Settings, Pool>(pgPort);

/**
 * Binds every verb to a `pg.Pool` (or one `pg.Client`) and default options. Per-call options
 * override the defaults; `tryWithLock`, `tryLock` and `tryAcquireSessionLock` try once unless the
 * call itself sets `timeoutMs`. The callback receives the `pg.PoolClient` running the transaction.
 *
 * @example
 * ```ts
 * import pg from 'pg';
 * import { advisoryLocks } from '@pglock/pg';
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * const locks = advisoryLocks(pool, { namespace: 'billing', timeoutMs: 5_000 });
 * await locks.withLock(`account:${id}`, async (client) => {
 *   await client.query('UPDATE accounts SET balance = balance - $1 WHERE id = $2', [amount, id]);
 * });
 * ```
 */
export function advisoryLocks<D extends PgQueryable>(
  db: D,
  defaults?: core.AdvisoryLocksOptions<Settings>,
): PgAdvisoryLocks<ClientOf<D>> {
  return createAdvisoryLocks(pgPort, db, defaults) as PgAdvisoryLocks<ClientOf<D>>;
}

/**
 * Runs `fn` in a new transaction on one pinned client whose first statement takes the lock;
 * COMMIT (or ROLLBACK when `fn` throws) releases it. Given a client inside a transaction, or called
 * inside a running callback on the same pool, it nests there with a savepoint.
 *
 * @example
 * ```ts
 * import { withLock } from '@pglock/pg';
 *
 * await withLock(pool, 'leaderboard', async (client) => {
 *   await client.query('REFRESH MATERIALIZED VIEW leaderboard');
 * });
 * ```
 */
export function withLock<D extends PgQueryable, T>(
  db: D,
  target: Target,
  fn: (client: ClientOf<D>) => Promise<T>,
  options?: PgWithLockOptions,
): Promise<T> {
  return functions.withLock(db, target, fn as (client: PgClientLike) => Promise<T>, options);
}

/**
 * Like {@link withLock}, but resolves `{ acquired: false }` instead of throwing when the lock is
 * taken. `timeoutMs` defaults to 0 (one try).
 *
 * @example
 * ```ts
 * import { tryWithLock } from '@pglock/pg';
 *
 * const result = await tryWithLock(pool, 'nightly-job', async (client) => runJob(client));
 * if (!result.acquired) console.log('another instance runs it');
 * ```
 */
export function tryWithLock<D extends PgQueryable, T>(
  db: D,
  target: Target,
  fn: (client: ClientOf<D>) => Promise<T>,
  options?: PgWithLockOptions,
): Promise<core.TryResult<T>> {
  return functions.tryWithLock(db, target, fn as (client: PgClientLike) => Promise<T>, options);
}

/**
 * Takes a transaction-scoped lock inside a transaction the caller opened on `client` (after your
 * `BEGIN`); held until it ends. A pool, or a client outside a transaction, is `LockUsageError`.
 *
 * @example
 * ```ts
 * import { lock } from '@pglock/pg';
 *
 * const client = await pool.connect();
 * await client.query('BEGIN');
 * await lock(client, ['account:1', 'account:2']);
 * await client.query('COMMIT');
 * client.release();
 * ```
 */
export function lock(client: Tx, target: Target, options?: Options): Promise<void> {
  return functions.lock(client, target, options);
}

/**
 * Tries a transaction-scoped lock inside the caller's transaction: `true` when held (until the
 * transaction ends), `false` when taken elsewhere. `timeoutMs` defaults to 0.
 *
 * @example
 * ```ts
 * import { tryLock } from '@pglock/pg';
 *
 * if (await tryLock(client, 'report')) await buildReport(client);
 * ```
 */
export function tryLock(client: Tx, target: Target, options?: Options): Promise<boolean> {
  return functions.tryLock(client, target, options);
}

/**
 * True when any session holds `key`: a snapshot, for dashboards and tests.
 *
 * @example
 * ```ts
 * import { isLocked } from '@pglock/pg';
 *
 * console.log(await isLocked(pool, 'nightly-job'));
 * ```
 */
export function isLocked(
  db: PgQueryable,
  key: core.LockKeyInput,
  options?: Pick<Options, 'namespace'>,
): Promise<boolean> {
  return functions.isLocked(db, key, options);
}

/**
 * Every advisory lock in the current database with holders and waiters.
 *
 * @example
 * ```ts
 * import { inspectLocks } from '@pglock/pg';
 *
 * console.table(await inspectLocks(pool));
 * ```
 */
export function inspectLocks(db: PgQueryable): Promise<core.AdvisoryLockInfo[]> {
  return functions.inspectLocks(db);
}

/**
 * Takes a session lock on a dedicated connection checked out of `pool` and keeps it until
 * `release()` (or the connection's death, reported through `signal`). Refused through a
 * transaction-mode pooler.
 *
 * @example
 * ```ts
 * import { acquireSessionLock } from '@pglock/pg';
 *
 * await using leader = await acquireSessionLock(pool, 'scheduler-leader');
 * while (!leader.signal.aborted) await runSchedulerTick();
 * ```
 */
export function acquireSessionLock(
  pool: Pool,
  target: Target,
  options?: SessionOptions,
): Promise<core.SessionLock> {
  return functions.acquireSessionLock(pool, target, options);
}

/**
 * Like {@link acquireSessionLock}, but resolves `undefined` when the lock is taken elsewhere.
 * `timeoutMs` defaults to 0 (one try).
 *
 * @example
 * ```ts
 * import { tryAcquireSessionLock } from '@pglock/pg';
 *
 * const leader = await tryAcquireSessionLock(pool, 'scheduler-leader');
 * if (leader) startScheduling(leader.signal);
 * ```
 */
export function tryAcquireSessionLock(
  pool: Pool,
  target: Target,
  options?: SessionOptions,
): Promise<core.SessionLock | undefined> {
  return functions.tryAcquireSessionLock(pool, target, options);
}

/**
 * Runs `fn(signal)` while holding a session lock, and releases it after; `signal` aborts with
 * `LockLostError` if the connection dies meanwhile. `fn`'s error wins over a release failure.
 *
 * @example
 * ```ts
 * import { withSessionLock } from '@pglock/pg';
 *
 * await withSessionLock(pool, 'reindex', async (signal) => {
 *   for (const table of tables) {
 *     signal.throwIfAborted();
 *     await reindex(table);
 *   }
 * });
 * ```
 */
export function withSessionLock<T>(
  pool: Pool,
  target: Target,
  fn: (signal: AbortSignal) => Promise<T>,
  options?: SessionOptions,
): Promise<T> {
  return functions.withSessionLock(pool, target, fn, options);
}

/**
 * Runs `fn` at most once per period across every process, in a transaction on one pinned client
 * that tries the name's lock and records the period's run in `pglock_jobs` (create it once with
 * `JOBS_TABLE_DDL`, or the DDL `pglock schema` prints). The schedule is `per`, or `cron` with a
 * `timeZone`; `minIntervalMs` and `catchUp` as in docs/scheduling.md. Resolves
 * `{ ran: true, value, period, missed }`, or `{ ran: false, reason: 'done' | 'busy' | 'too-soon', period }`. A job that throws uses up nothing: its error
 * reaches you unchanged, everything rolls back, and the next caller in the period runs it.
 *
 * @example
 * ```ts
 * import { runOnce } from '@pglock/pg';
 *
 * // Every instance fires the same cron tick; one of them rebuilds the leaderboard each hour.
 * const result = await runOnce(pool, 'leaderboard', { per: '1h' }, async (client, { period }) => {
 *   await client.query('INSERT INTO leaderboard_builds (period) VALUES ($1)', [period.start]);
 * });
 * if (!result.ran) console.log(`not this time: ${result.reason}`);
 *
 * // At 03:00 in Berlin, whatever the offset is that day; `missed` counts the days no run took.
 * await runOnce(pool, 'nightly', { cron: '0 3 * * *', timeZone: 'Europe/Berlin' }, async (client, { missed }) => {
 *   await client.query('INSERT INTO nightly_runs (missed) VALUES ($1)', [missed]);
 * });
 * ```
 */
export function runOnce<D extends PgQueryable, T>(
  db: D,
  name: string,
  options: PgRunOnceOptions,
  fn: (client: ClientOf<D>, run: Context) => Promise<T>,
): Promise<core.RunOnceResult<T>> {
  return functions.runOnce(db, name, options, fn as (client: PgClientLike, run: Context) => Promise<T>);
}

/**
 * Campaigns for leadership of `name` on a connection checked out of `pool` until `stop()`. Once
 * elected, `onElected({ term, signal })` runs: `term` is a fencing token (greater than every earlier
 * term of the name), `signal` aborts when leadership is lost or on `stop()`.
 *
 * @example
 * ```ts
 * import { leader } from '@pglock/pg';
 *
 * const campaign = leader(pool, 'scheduler', {
 *   onElected: ({ term, signal }) => {
 *     const timer = setInterval(() => void enqueueDueJobs(term), 1_000);
 *     signal.addEventListener('abort', () => clearInterval(timer));
 *   },
 * });
 * process.once('SIGTERM', () => void campaign.stop());
 * ```
 */
export function leader(pool: Pool, name: string, options: core.LeaderOptions): core.LeaderCampaign {
  return functions.leader(pool, name, options);
}

/**
 * Who leads `name` now, without campaigning: `{ term, since, identity, pid, application }` (the
 * term and identity from `pglock_jobs`, the lock holder's backend from `pg_locks` and
 * `pg_stat_activity`), or `undefined` when no session holds the name's lock. One statement, so it
 * works through a transaction-mode pooler too.
 *
 * @example
 * ```ts
 * import { currentLeader } from '@pglock/pg';
 *
 * const now = await currentLeader(pool, 'scheduler');
 * console.log(now === undefined ? 'nobody leads' : `term ${now.term}: ${now.identity} (pid ${now.pid})`);
 * ```
 */
export function currentLeader(
  db: PgQueryable,
  name: string,
  options?: core.CurrentLeaderOptions,
): Promise<core.LeaderInfo | undefined> {
  return functions.currentLeader(db, name, options);
}

/**
 * Calls `onChange(leader, previous)` once with who leads `name`, then on every new term and when
 * nobody leads any more, reading {@link currentLeader} every `pollMs` (default 1000) until `stop()`
 * (or `signal`). A failed reading goes to `onError`; bad options throw from the call.
 *
 * @example
 * ```ts
 * import { observeLeader } from '@pglock/pg';
 *
 * await using observer = observeLeader(pool, 'scheduler', {
 *   onChange: (leader) => console.log(leader ? `leader: ${leader.identity} (term ${leader.term})` : 'no leader'),
 * });
 * ```
 */
export function observeLeader(
  db: PgQueryable,
  name: string,
  options: core.ObserveLeaderOptions,
): core.LeaderObserver {
  return functions.observeLeader(db, name, options);
}
