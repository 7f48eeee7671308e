import type * as core from '@pglock/core';
import { createAdvisoryLocks, type LockPort, lockFunctions } from '@pglock/core/adapter';
import { drizzleHandle, drizzlePort } from './drizzle-port.ts';
import type {
  DrizzleDatabaseLike as Db,
  DrizzleRootDatabase as Root,
  DrizzleTransactionSettings as Settings,
  DrizzleTransactionLike as Tx,
  TxOf,
} from './drizzle-types.ts';

/**
 * Options of `withLock` / `tryWithLock` on Drizzle: core's, plus `transaction` (Drizzle's config).
 *
 * @example
 * ```ts
 * import type { DrizzleWithLockOptions } from '@pglock/drizzle';
 *
 * const options: DrizzleWithLockOptions = { timeoutMs: 5_000, transaction: { isolationLevel: 'serializable' } };
 * ```
 */
export type DrizzleWithLockOptions = core.WithLockOptions<Settings>;

/**
 * The verbs bound to one Drizzle database (or transaction): `Tx` is its transaction type. The
 * session verbs need a database over a `pg.Pool`, a `pg.Client` or postgres.js.
 *
 * @example
 * ```ts
 * import type { DrizzleAdvisoryLocks, TxOf } from '@pglock/drizzle';
 *
 * let locks: DrizzleAdvisoryLocks<TxOf<typeof db>>;
 * ```
 */
export type DrizzleAdvisoryLocks<T> = core.AdvisoryLocks<T, Tx, Settings> & core.SessionAdvisoryLocks;

type Body<D extends Db, T> = (tx: TxOf<D>) => Promise<T>;
type Options = DrizzleWithLockOptions;
type Target = core.LockTarget;
type Job<D extends Db, T> = (tx: TxOf<D>, run: core.RunOnceContext) => Promise<T>;
// Callbacks are typed by the database's own `TxOf` above; core only passes them on.
const functions = lockFunctions<Db, never, Tx, Settings, Root>(drizzlePort as LockPort<Db, never>);

/**
 * Binds every verb to a Drizzle PostgreSQL database (node-postgres Pool or Client, postgres.js,
 * PGlite) and default options. Per-call options override the defaults (namespace included, for
 * every verb); the try verbs try once unless the call itself sets `timeoutMs`. `tx` in callbacks is
 * `db`'s own transaction type, schema included.
 *
 * @example
 * ```ts
 * import { drizzle } from 'drizzle-orm/node-postgres';
 * import { advisoryLocks } from '@pglock/drizzle';
 *
 * const db = drizzle(process.env.DATABASE_URL!);
 * const locks = advisoryLocks(db, { namespace: 'billing', timeoutMs: 5_000 });
 * await locks.withLock(`account:${id}`, async (tx) => {
 *   await tx.update(accounts).set({ frozen: true }).where(eq(accounts.id, id));
 * });
 * ```
 */
export function advisoryLocks<D extends Db>(db: D, defaults?: core.AdvisoryLocksOptions<Settings>) {
  const locks = createAdvisoryLocks(drizzlePort, db, defaults);
  drizzleHandle(db, 'advisoryLocks');
  return locks as DrizzleAdvisoryLocks<TxOf<D>>;
}

/**
 * Runs `fn` in `db.transaction(async (tx) => …)` whose first statement takes the lock; COMMIT (or
 * ROLLBACK when `fn` throws) releases it. Given a transaction, or called inside a running callback
 * on the same database, it nests there with a savepoint, and the lock lasts until that outer
 * transaction ends.
 *
 * @example
 * ```ts
 * import { sql } from 'drizzle-orm';
 * import { drizzle } from 'drizzle-orm/node-postgres';
 * import { withLock } from '@pglock/drizzle';
 *
 * const db = drizzle(process.env.DATABASE_URL!);
 * await withLock(db, ['account:1', 'account:2'], async (tx) => {
 *   await tx.update(accounts).set({ balance: sql`balance - 10` }).where(eq(accounts.id, 1));
 *   await tx.update(accounts).set({ balance: sql`balance + 10` }).where(eq(accounts.id, 2));
 * }, { timeoutMs: 5_000, transaction: { isolationLevel: 'read committed' } });
 * ```
 */
export const withLock = <D extends Db, T>(db: D, target: Target, fn: Body<D, T>, options?: Options) =>
  functions.withLock(db, target, fn, options);

/**
 * Like {@link withLock}, but resolves `{ acquired: false }` (the transaction rolled back, `fn` not
 * run) when the lock is taken. Tries once unless `timeoutMs` is set.
 *
 * @example
 * ```ts
 * import { tryWithLock } from '@pglock/drizzle';
 *
 * const run = await tryWithLock(db, 'job:nightly-report', async (tx) => buildReport(tx));
 * if (!run.acquired) console.log('another worker has it');
 * ```
 */
export const tryWithLock = <D extends Db, T>(db: D, target: Target, fn: Body<D, T>, options?: Options) =>
  functions.tryWithLock(db, target, fn, options);

/**
 * Takes a transaction-scoped lock inside your own `db.transaction`; held until it ends. Only a `tx`
 * type-checks (a database is `LockUsageError` at run time too: in autocommit the lock would end at
 * once). When not acquired in time the transaction has failed: let the error leave the callback.
 *
 * @example
 * ```ts
 * import { lock } from '@pglock/drizzle';
 *
 * await db.transaction(async (tx) => {
 *   await lock(tx, `account:${id}`, { timeoutMs: 2_000 });
 *   await tx.update(accounts).set({ frozen: true }).where(eq(accounts.id, id));
 * });
 * ```
 */
export const lock = functions.lock;

/**
 * Tries a transaction-scoped lock inside your own `db.transaction`: `true` when held until it ends,
 * `false` when taken (the transaction stays usable). Tries once unless `timeoutMs` is set.
 *
 * @example
 * ```ts
 * import { tryLock } from '@pglock/drizzle';
 *
 * await db.transaction(async (tx) => {
 *   if (!(await tryLock(tx, 'job:cleanup'))) return;
 *   await tx.delete(sessions).where(lt(sessions.expiresAt, new Date()));
 * });
 * ```
 */
export const tryLock = functions.tryLock;

/**
 * True when any session holds `key`: a snapshot, for dashboards and tests (to take a lock only when
 * free, use {@link tryWithLock}). Takes a database or a transaction.
 *
 * @example
 * ```ts
 * import { isLocked } from '@pglock/drizzle';
 *
 * console.log(await isLocked(db, 'job:nightly-report'));
 * ```
 */
export const isLocked = functions.isLocked;

/**
 * Every advisory lock in the current database with its holders and waiters. Takes a database or a
 * transaction (on PGlite, pass the transaction while one runs: PGlite runs one at a time).
 *
 * @example
 * ```ts
 * import { inspectLocks } from '@pglock/drizzle';
 *
 * console.table(await inspectLocks(db));
 * ```
 */
export const inspectLocks = functions.inspectLocks;

/**
 * Takes a session lock on a connection of its own and keeps it until `release()` (or the
 * connection's death, reported through `signal`). Over a `pg.Pool` a client is checked out; over a
 * `pg.Client` or postgres.js a connection is opened with the same settings. Refused through a
 * transaction-mode pooler, and on PGlite.
 *
 * @example
 * ```ts
 * import { acquireSessionLock } from '@pglock/drizzle';
 *
 * await using leader = await acquireSessionLock(db, 'scheduler-leader');
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
 * import { tryAcquireSessionLock } from '@pglock/drizzle';
 *
 * const leader = await tryAcquireSessionLock(db, 'scheduler-leader');
 * if (leader) startScheduling(leader.signal);
 * ```
 */
export const tryAcquireSessionLock = functions.tryAcquireSessionLock;

/**
 * Runs `fn(signal)` while holding a session lock and releases it after; `signal` aborts with
 * `LockLostError` when the connection dies meanwhile. `fn`'s error wins over a release failure.
 *
 * @example
 * ```ts
 * import { withSessionLock } from '@pglock/drizzle';
 *
 * await withSessionLock(db, 'reindex', async (signal) => {
 *   for (const table of tables) {
 *     signal.throwIfAborted();
 *     await reindex(table);
 *   }
 * });
 * ```
 */
export const withSessionLock = functions.withSessionLock;

/**
 * Runs `fn` at most once per period across every process, in `db.transaction` that tries the name's
 * lock and records the period's run in `pglock_jobs` (create it once with `JOBS_TABLE_DDL`, or the DDL
 * `pglock schema` prints). The schedule is `per`, or `cron` with a `timeZone`. Resolves
 * `{ ran: true, value, period, missed }`, or `{ ran: false, reason }` (`'done'`, `'busy'`, `'too-soon'`); a job
 * that throws uses up nothing: its error reaches you, everything rolls back, the next caller runs it.
 *
 * @example
 * ```ts
 * import { runOnce } from '@pglock/drizzle';
 *
 * // Every instance fires the same cron tick; one of them rebuilds the leaderboard each hour.
 * const result = await runOnce(db, 'leaderboard', { per: '1h' }, async (tx) => rebuildLeaderboard(tx));
 * if (!result.ran) console.log(`not this time: ${result.reason}`);
 * ```
 */
export const runOnce = <D extends Db, T>(
  db: D,
  name: string,
  options: core.RunOnceOptions<Settings>,
  fn: Job<D, T>,
) => functions.runOnce(db, name, options, fn);

/**
 * Campaigns for leadership of `name` on a session lock of its own until `stop()`. Once elected,
 * `onElected({ term, signal })` runs: `term` is a fencing token (greater than every earlier term of
 * the name), `signal` aborts when leadership is lost or on `stop()`.
 *
 * @example
 * ```ts
 * import { leader } from '@pglock/drizzle';
 *
 * const campaign = leader(db, 'scheduler', {
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
 * import { currentLeader } from '@pglock/drizzle';
 *
 * const now = await currentLeader(db, 'scheduler');
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
 * import { observeLeader } from '@pglock/drizzle';
 *
 * await using observer = observeLeader(db, 'scheduler', {
 *   onChange: (leader) => console.log(leader ? `leader: ${leader.identity} (term ${leader.term})` : 'no leader'),
 * });
 * ```
 */
export const observeLeader = functions.observeLeader;
