import type {
  AdvisoryLockInfo,
  CurrentLeaderOptions,
  LeaderCampaign,
  LeaderInfo,
  LeaderObserver,
  LeaderOptions,
  LockKeyInput,
  LockOptions,
  LockTarget,
  ObserveLeaderOptions,
  RunOnceContext,
  RunOnceResult,
  SessionLock,
  SessionLockOptions,
  TryResult,
} from '@pglock/core';
import { createAdvisoryLocks, lockVerbs } from '@pglock/core/adapter';
import type { Kysely, Transaction } from 'kysely';
import { type Db, kyselyPort, kyselyPortFor } from './kysely-port.ts';
import type {
  KyselyAdvisoryLocks,
  KyselyAdvisoryLocksOptions,
  KyselyRunOnceOptions,
  KyselyTransactionLike,
  KyselyTransactionSettings,
  KyselyWithLockOptions,
} from './kysely-types.ts';

const verbs = lockVerbs<Db, Db, KyselyTransactionLike, KyselyTransactionSettings>(kyselyPort);
/** The default verbs of `db`, typed by its `Database`. */
const of = <DB>(db: Kysely<DB>) => verbs(db as unknown as Db) as unknown as KyselyAdvisoryLocks<DB>;

/**
 * Binds every verb to a `Kysely` instance and default options. Per-call options override the
 * defaults; `tryWithLock`, `tryLock` and `tryAcquireSessionLock` try once unless the call itself
 * sets `timeoutMs`. Callbacks receive your `Transaction<DB>`. `control` names a second instance for
 * what must not wait for a free connection of `db` (see {@link KyselyAdvisoryLocksOptions}).
 *
 * @example
 * ```ts
 * import { Kysely, PostgresDialect } from 'kysely';
 * import pg from 'pg';
 * import { advisoryLocks } from '@pglock/kysely';
 *
 * const db = new Kysely<Database>({
 *   dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: process.env.DATABASE_URL }) }),
 * });
 * const locks = advisoryLocks(db, { namespace: 'shop', timeoutMs: 5_000 });
 * await locks.withLock(`product:${id}`, async (trx) => {
 *   await trx.updateTable('product').set({ stock: 0 }).where('id', '=', id).execute();
 * });
 * ```
 */
export function advisoryLocks<DB>(
  db: Kysely<DB>,
  defaults?: KyselyAdvisoryLocksOptions,
): KyselyAdvisoryLocks<DB> {
  const control = typeof defaults === 'object' && defaults !== null ? defaults.control : undefined;
  const port = control === undefined ? kyselyPort : kyselyPortFor(control);
  return createAdvisoryLocks(port, db as unknown as Db, defaults) as unknown as KyselyAdvisoryLocks<DB>;
}

/**
 * Runs `fn` in `db.transaction()` whose first statement takes the lock; the commit (or the rollback
 * when `fn` throws) releases it. Given a transaction, or called inside a running callback on the
 * same `db`, it nests there with a savepoint.
 *
 * @example
 * ```ts
 * import { withLock } from '@pglock/kysely';
 * import type { Kysely } from 'kysely';
 *
 * declare const db: Kysely<{ product: { id: number; stock: number } }>;
 * declare const id: number;
 * await withLock(db, `product:${id}`, async (trx) => {
 *   await trx.updateTable('product').set((eb) => ({ stock: eb('stock', '-', 1) })).where('id', '=', id).execute();
 * });
 * ```
 */
export function withLock<DB, T>(
  db: Kysely<DB> | Transaction<DB>,
  target: LockTarget,
  fn: (trx: Transaction<DB>) => Promise<T>,
  options?: KyselyWithLockOptions,
): Promise<T> {
  return of(db).withLock(target, fn, options);
}

/**
 * Like {@link withLock}, but resolves `{ acquired: false }` instead of throwing when the lock is
 * taken (the transaction is rolled back). `timeoutMs` defaults to 0 (one try).
 *
 * @example
 * ```ts
 * import { tryWithLock } from '@pglock/kysely';
 *
 * const result = await tryWithLock(db, 'nightly-report', (trx) => buildReport(trx));
 * if (!result.acquired) console.log('another instance builds it');
 * ```
 */
export function tryWithLock<DB, T>(
  db: Kysely<DB> | Transaction<DB>,
  target: LockTarget,
  fn: (trx: Transaction<DB>) => Promise<T>,
  options?: KyselyWithLockOptions,
): Promise<TryResult<T>> {
  return of(db).tryWithLock(target, fn, options);
}

/**
 * Takes a transaction-scoped lock inside a Kysely transaction; it is held until the transaction
 * ends. Only a transaction compiles. `signal` needs the database to cancel from: it works in a
 * transaction `withLock` opened, and with `advisoryLocks(db).lock(trx, …)` in any other.
 *
 * @example
 * ```ts
 * import { lock } from '@pglock/kysely';
 *
 * await db.transaction().execute(async (trx) => {
 *   await lock(trx, ['account:1', 'account:2']);
 *   // … transfer …
 * });
 * ```
 */
export function lock(trx: KyselyTransactionLike, target: LockTarget, options?: LockOptions): Promise<void> {
  return verbs(trx as unknown as Db).lock(trx, target, options);
}

/**
 * Tries a transaction-scoped lock inside a Kysely transaction: `true` when held (until the
 * transaction ends), `false` when taken elsewhere. `timeoutMs` defaults to 0.
 *
 * @example
 * ```ts
 * import { tryLock } from '@pglock/kysely';
 *
 * await db.transaction().execute(async (trx) => {
 *   if (await tryLock(trx, 'report')) await buildReport(trx);
 * });
 * ```
 */
export function tryLock(
  trx: KyselyTransactionLike,
  target: LockTarget,
  options?: LockOptions,
): Promise<boolean> {
  return verbs(trx as unknown as Db).tryLock(trx, target, options);
}

/**
 * True when any session holds `key`: a snapshot, for dashboards and tests.
 *
 * @example
 * ```ts
 * import { isLocked } from '@pglock/kysely';
 *
 * console.log(await isLocked(db, 'nightly-report'));
 * ```
 */
export function isLocked<DB>(
  db: Kysely<DB>,
  key: LockKeyInput,
  options?: Pick<LockOptions, 'namespace'>,
): Promise<boolean> {
  return of(db).isLocked(key, options);
}

/**
 * Every advisory lock in the current database, holders and waiters.
 *
 * @example
 * ```ts
 * import { inspectLocks } from '@pglock/kysely';
 *
 * console.table(await inspectLocks(db));
 * ```
 */
export function inspectLocks<DB>(db: Kysely<DB>): Promise<AdvisoryLockInfo[]> {
  return of(db).inspectLocks();
}

/**
 * Takes a session lock on a connection pinned with `db.connection()` and keeps it until `release()`
 * (or its loss, reported through `signal`). Refused through a transaction-mode pooler, and when no
 * second connection of `db` can check for one.
 *
 * @example
 * ```ts
 * import { acquireSessionLock } from '@pglock/kysely';
 *
 * await using leader = await acquireSessionLock(db, 'scheduler-leader');
 * while (!leader.signal.aborted) await runSchedulerTick(db);
 * ```
 */
export function acquireSessionLock<DB>(
  db: Kysely<DB>,
  target: LockTarget,
  options?: SessionLockOptions,
): Promise<SessionLock> {
  return of(db).acquireSessionLock(target, options);
}

/**
 * Like {@link acquireSessionLock}, but resolves `undefined` when the lock is taken elsewhere.
 * `timeoutMs` defaults to 0 (one try): the usual shape of leader election.
 *
 * @example
 * ```ts
 * import { tryAcquireSessionLock } from '@pglock/kysely';
 *
 * const leader = await tryAcquireSessionLock(db, 'scheduler-leader');
 * if (leader) startScheduling(leader.signal);
 * ```
 */
export function tryAcquireSessionLock<DB>(
  db: Kysely<DB>,
  target: LockTarget,
  options?: SessionLockOptions,
): Promise<SessionLock | undefined> {
  return of(db).tryAcquireSessionLock(target, options);
}

/**
 * Runs `fn(signal)` while holding a session lock, and releases it after; `signal` aborts with
 * `LockLostError` if the lock is lost meanwhile. `fn`'s error wins over a release failure. Run your
 * queries on `db` as usual: the pinned connection is the lock's alone.
 *
 * @example
 * ```ts
 * import { withSessionLock } from '@pglock/kysely';
 *
 * await withSessionLock(db, 'reindex', async (signal) => {
 *   for (const table of tables) {
 *     signal.throwIfAborted();
 *     await reindex(db, table);
 *   }
 * });
 * ```
 */
export function withSessionLock<DB, T>(
  db: Kysely<DB>,
  target: LockTarget,
  fn: (signal: AbortSignal) => Promise<T>,
  options?: SessionLockOptions,
): Promise<T> {
  return of(db).withSessionLock(target, fn, options);
}

/**
 * Runs `fn` at most once per period across every process, in `db.transaction()` that tries the name's
 * lock and records the period's run in `pglock_jobs` (create it once: a Kysely migration is in
 * docs/scheduling.md, or `sql.raw(JOBS_TABLE_DDL)`). The schedule is `per`, or `cron` with a
 * `timeZone`. Resolves `{ ran: true, value, period, missed }`, or
 * `{ ran: false, reason: 'done' | 'busy' | 'too-soon', period }`; a job that throws uses up nothing: its error
 * reaches you, everything rolls back, and the next caller in the period runs it.
 *
 * @example
 * ```ts
 * import { runOnce } from '@pglock/kysely';
 *
 * // Every instance fires the same cron tick; one of them rebuilds the leaderboard each hour.
 * const result = await runOnce(db, 'leaderboard', { per: '1h' }, async (trx, { period }) => rebuildLeaderboard(trx, period));
 * if (!result.ran) console.log(`not this time: ${result.reason}`);
 * ```
 */
export function runOnce<DB, T>(
  db: Kysely<DB> | Transaction<DB>,
  name: string,
  options: KyselyRunOnceOptions,
  fn: (trx: Transaction<DB>, run: RunOnceContext) => Promise<T>,
): Promise<RunOnceResult<T>> {
  return of(db).runOnce(name, options, fn);
}

/**
 * Campaigns for leadership of `name` on a connection pinned with `db.connection()` until `stop()`.
 * Once elected, `onElected({ term, signal })` runs: `term` is a fencing token (greater than every
 * earlier term of the name), `signal` aborts when leadership is lost or on `stop()`. Its heartbeat and
 * pooler check need a second connection of `db` (or `advisoryLocks(db, { control }).leader(…)`).
 *
 * @example
 * ```ts
 * import { leader } from '@pglock/kysely';
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
export function leader<DB>(db: Kysely<DB>, name: string, options: LeaderOptions): LeaderCampaign {
  return of(db).leader(name, options);
}

/**
 * Who leads `name` now, without campaigning: `{ term, since, identity, pid, application }` (the
 * term and identity from `pglock_jobs`, the lock holder's backend from `pg_locks` and
 * `pg_stat_activity`), or `undefined` when no session holds the name's lock. One statement, so it
 * works through a transaction-mode pooler too.
 *
 * @example
 * ```ts
 * import { currentLeader } from '@pglock/kysely';
 *
 * const now = await currentLeader(db, 'scheduler');
 * console.log(now === undefined ? 'nobody leads' : `term ${now.term}: ${now.identity} (pid ${now.pid})`);
 * ```
 */
export function currentLeader<DB>(
  db: Kysely<DB> | Transaction<DB>,
  name: string,
  options?: CurrentLeaderOptions,
): Promise<LeaderInfo | undefined> {
  return of(db).currentLeader(name, options);
}

/**
 * Calls `onChange(leader, previous)` once with who leads `name`, then on every new term and when
 * nobody leads any more, reading {@link currentLeader} every `pollMs` (default 1000) until `stop()`
 * (or `signal`). A failed reading goes to `onError`; bad options throw from the call.
 *
 * @example
 * ```ts
 * import { observeLeader } from '@pglock/kysely';
 *
 * await using observer = observeLeader(db, 'scheduler', {
 *   onChange: (leader) => console.log(leader ? `leader: ${leader.identity} (term ${leader.term})` : 'no leader'),
 * });
 * ```
 */
export function observeLeader<DB>(
  db: Kysely<DB> | Transaction<DB>,
  name: string,
  options: ObserveLeaderOptions,
): LeaderObserver {
  return of(db).observeLeader(name, options);
}
