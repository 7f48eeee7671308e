import type * as core from '@pglock/core';
import { createAdvisoryLocks, type LockPort, lockFunctions } from '@pglock/core/adapter';
import { postgresPort } from './postgres-port.ts';
import type {
  PostgresQueryable as Db,
  PostgresWithLockOptions as Options,
  PostgresAdvisoryLocks,
  PostgresSqlLike as Root,
  PostgresTransactionSettings as Settings,
  PostgresTransactionLike as Tx,
  TxOf,
} from './postgres-types.ts';

type Target = core.LockTarget;
type Body<S extends Db, T> = (tx: TxOf<S>) => Promise<T>;
type Job<S extends Db, T> = (tx: TxOf<S>, run: core.RunOnceContext) => Promise<T>;
// Callbacks are typed by the `sql`'s own `TxOf` above; core only passes them on.
const functions = lockFunctions<Db, never, Tx, Settings, Root>(postgresPort as LockPort<Db, never>);

/**
 * Binds every verb to a postgres.js `sql` (or one transaction) and default options. Per-call options
 * override the defaults (namespace included, for every verb); the try verbs try once unless the call
 * itself sets `timeoutMs`. Callbacks get postgres.js's own `TransactionSql` of `sql.begin`.
 *
 * @example
 * ```ts
 * import postgres from 'postgres';
 * import { advisoryLocks } from '@pglock/postgres';
 *
 * const sql = postgres(process.env.DATABASE_URL!);
 * const locks = advisoryLocks(sql, { namespace: 'billing', timeoutMs: 5_000 });
 * await locks.withLock(`account:${id}`, async (tx) => {
 *   await tx`UPDATE accounts SET frozen = true WHERE id = ${id}`;
 * });
 * ```
 */
export const advisoryLocks = <S extends Db>(sql: S, defaults?: core.AdvisoryLocksOptions<Settings>) =>
  createAdvisoryLocks(postgresPort, sql, defaults) as PostgresAdvisoryLocks<TxOf<S>>;

/**
 * Runs `fn` in `sql.begin(async (tx) => …)` whose first statement takes the lock; COMMIT (or
 * ROLLBACK when `fn` throws) releases it. Given a transaction, or called inside a running callback
 * on the same `sql`, it nests there with a savepoint, and the lock lasts until that outer
 * transaction ends.
 *
 * @example
 * ```ts
 * import postgres from 'postgres';
 * import { withLock } from '@pglock/postgres';
 *
 * const sql = postgres(process.env.DATABASE_URL!);
 * await withLock(sql, ['account:1', 'account:2'], async (tx) => {
 *   await tx`UPDATE accounts SET balance = balance - 10 WHERE id = 1`;
 *   await tx`UPDATE accounts SET balance = balance + 10 WHERE id = 2`;
 * }, { timeoutMs: 5_000, transaction: { isolationLevel: 'read committed' } });
 * ```
 */
export const withLock = <S extends Db, T>(sql: S, target: Target, fn: Body<S, T>, options?: Options) =>
  functions.withLock(sql, target, fn, options);

/**
 * Like {@link withLock}, but resolves `{ acquired: false }` (the transaction rolled back, `fn` not
 * run) when the lock is taken. Tries once unless `timeoutMs` is set.
 *
 * @example
 * ```ts
 * import { tryWithLock } from '@pglock/postgres';
 *
 * const run = await tryWithLock(sql, 'job:nightly-report', async (tx) => buildReport(tx));
 * if (!run.acquired) console.log('another worker has it');
 * ```
 */
export const tryWithLock = <S extends Db, T>(sql: S, target: Target, fn: Body<S, T>, options?: Options) =>
  functions.tryWithLock(sql, target, fn, options);

/**
 * Takes a transaction-scoped lock inside your own `sql.begin`; held until it ends. Only a `tx`
 * type-checks (`sql` itself is `LockUsageError` at run time too: in autocommit the lock would end at
 * once). When not acquired in time the transaction has failed: let the error leave the callback.
 *
 * @example
 * ```ts
 * import { lock } from '@pglock/postgres';
 *
 * await sql.begin(async (tx) => {
 *   await lock(tx, `account:${id}`, { timeoutMs: 2_000 });
 *   await tx`UPDATE accounts SET frozen = true WHERE id = ${id}`;
 * });
 * ```
 */
export const lock = functions.lock;

/**
 * Tries a transaction-scoped lock inside your own `sql.begin`: `true` when held until it ends,
 * `false` when taken (the transaction stays usable). Tries once unless `timeoutMs` is set.
 *
 * @example
 * ```ts
 * import { tryLock } from '@pglock/postgres';
 *
 * await sql.begin(async (tx) => {
 *   if (!(await tryLock(tx, 'job:cleanup'))) return;
 *   await tx`DELETE FROM sessions WHERE expires_at < now()`;
 * });
 * ```
 */
export const tryLock = functions.tryLock;

/**
 * True when any session holds `key`: a snapshot, for dashboards and tests (to take a lock only when
 * free, use {@link tryWithLock}). Takes `sql` or a transaction.
 *
 * @example
 * ```ts
 * import { isLocked } from '@pglock/postgres';
 *
 * console.log(await isLocked(sql, 'job:nightly-report'));
 * ```
 */
export const isLocked = functions.isLocked;

/**
 * Every advisory lock in the current database with its holders and waiters. Takes `sql` or a
 * transaction.
 *
 * @example
 * ```ts
 * import { inspectLocks } from '@pglock/postgres';
 *
 * console.table(await inspectLocks(sql));
 * ```
 */
export const inspectLocks = functions.inspectLocks;

/**
 * Takes a session lock on a connection of its own, opened with the settings of `sql` (outside its
 * pool), and keeps it until `release()` (or the connection's death, reported through `signal`);
 * release closes that connection. Refused through a transaction-mode pooler.
 *
 * @example
 * ```ts
 * import { acquireSessionLock } from '@pglock/postgres';
 *
 * await using leader = await acquireSessionLock(sql, 'scheduler-leader');
 * while (!leader.signal.aborted) await runSchedulerTick();
 * ```
 */
export const acquireSessionLock = functions.acquireSessionLock;

/**
 * Like {@link acquireSessionLock}, but resolves `undefined` when the lock is taken elsewhere. Tries
 * once unless `timeoutMs` is set.
 *
 * @example
 * ```ts
 * import { tryAcquireSessionLock } from '@pglock/postgres';
 *
 * const leader = await tryAcquireSessionLock(sql, 'scheduler-leader');
 * if (leader) startScheduling(leader.signal);
 * ```
 */
export const tryAcquireSessionLock = functions.tryAcquireSessionLock;

/**
 * Runs `fn(signal)` while holding a session lock and releases it after; `signal` aborts with
 * `LockLostError` when the lock is lost meanwhile. `fn`'s error wins over a release failure. Run your
 * queries on `sql` as usual: the lock's connection is its alone.
 *
 * @example
 * ```ts
 * import { withSessionLock } from '@pglock/postgres';
 *
 * await withSessionLock(sql, 'reindex', async (signal) => {
 *   for (const table of tables) {
 *     signal.throwIfAborted();
 *     await sql`REINDEX TABLE ${sql(table)}`;
 *   }
 * });
 * ```
 */
export const withSessionLock = functions.withSessionLock;

/**
 * Runs `fn` at most once per period across every process, in `sql.begin` that tries the name's lock
 * and records the period's run in `pglock_jobs` (create it once with `JOBS_TABLE_DDL`, or the DDL
 * `pglock schema` prints). The schedule is `per`, or `cron` with a `timeZone`. Resolves
 * `{ ran: true, value, period, missed }`, or `{ ran: false, reason }` (`'done'`, `'busy'`, `'too-soon'`); a job
 * that throws uses up nothing: its error reaches you, everything rolls back, the next caller runs it.
 *
 * @example
 * ```ts
 * import { runOnce } from '@pglock/postgres';
 *
 * // Every instance fires the same cron tick; one of them rebuilds the leaderboard each hour.
 * const result = await runOnce(sql, 'leaderboard', { per: '1h' }, async (tx) => {
 *   await tx`REFRESH MATERIALIZED VIEW leaderboard`;
 * });
 * if (!result.ran) console.log(`not this time: ${result.reason}`);
 * ```
 */
export const runOnce = <S extends Db, T>(
  sql: S,
  name: string,
  options: core.RunOnceOptions<Settings>,
  fn: Job<S, T>,
) => functions.runOnce(sql, name, options, fn);

/**
 * Campaigns for leadership of `name` on a connection of its own until `stop()`. Once elected,
 * `onElected({ term, signal })` runs: `term` is a fencing token (greater than every earlier term of
 * the name), `signal` aborts when leadership is lost or on `stop()`.
 *
 * @example
 * ```ts
 * import { leader } from '@pglock/postgres';
 *
 * const campaign = leader(sql, 'scheduler', {
 *   onElected: ({ term, signal }) => {
 *     const timer = setInterval(() => void enqueueDueJobs(term), 1_000);
 *     signal.addEventListener('abort', () => clearInterval(timer));
 *   },
 * });
 * process.once('SIGTERM', () => void campaign.stop());
 * ```
 */
export const leader = functions.leader;

/**
 * Who leads `name` now, without campaigning: `{ term, since, identity, pid, application }` (the
 * term and identity from `pglock_jobs`, the lock holder's backend from `pg_locks` and
 * `pg_stat_activity`), or `undefined` when no session holds the name's lock. One statement, so it
 * works through a transaction-mode pooler too.
 *
 * @example
 * ```ts
 * import { currentLeader } from '@pglock/postgres';
 *
 * const now = await currentLeader(sql, 'scheduler');
 * console.log(now === undefined ? 'nobody leads' : `term ${now.term}: ${now.identity} (pid ${now.pid})`);
 * ```
 */
export const currentLeader = functions.currentLeader;

/**
 * Calls `onChange(leader, previous)` once with who leads `name`, then on every new term and when
 * nobody leads any more, reading {@link currentLeader} every `pollMs` (default 1000) until `stop()`
 * (or `signal`). A failed reading goes to `onError`; bad options throw from the call.
 *
 * @example
 * ```ts
 * import { observeLeader } from '@pglock/postgres';
 *
 * await using observer = observeLeader(sql, 'scheduler', {
 *   onChange: (leader) => console.log(leader ? `leader: ${leader.identity} (term ${leader.term})` : 'no leader'),
 * });
 * ```
 */
export const observeLeader = functions.observeLeader;
