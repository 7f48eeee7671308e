import type { CurrentLeaderOptions, LeaderInfo } from './current-leader.ts';
import type { AdvisoryLockInfo } from './inspect-locks.ts';
import type { LeaderCampaign, LeaderOptions } from './leader.ts';
import type { LeaderObserver, ObserveLeaderOptions } from './leader-observer.ts';
import type { LockKeyInput } from './lock-key.ts';
import type { LockOptions, LockTarget } from './lock-options.ts';
import type { RunOnceContext, RunOnceOptions, RunOnceResult } from './run-once.ts';
import type { SessionConnection, SessionLock, SessionLockOptions } from './session-lock.ts';
import type { TryResult, WithLockOptions } from './transaction-lock.ts';
import type { TransactionSettings } from './transaction-settings.ts';

// The types of the verbs one factory builds: the handle's methods (AdvisoryLocks, its session verbs),
// their defaults, their names in messages, and the same verbs as functions taking the handle first.
// Built in create-advisory-locks.ts, the one place that makes them.

/**
 * Defaults of one factory: every verb's options (per-call options win; a try function tries once
 * unless the call itself sets `timeoutMs`), the transaction settings of `withLock`, and the
 * heartbeat of session locks.
 *
 * @example
 * ```ts
 * import type { AdvisoryLocksOptions } from '@pglock/core';
 *
 * const defaults: AdvisoryLocksOptions = { namespace: 'billing', timeoutMs: 5_000, heartbeatMs: 500 };
 * ```
 */
export interface AdvisoryLocksOptions<S extends TransactionSettings = TransactionSettings>
  extends LockOptions {
  readonly transaction?: S | undefined;
  readonly heartbeatMs?: number | undefined;
  /** Where session locks are held: `'shared'` (the default) or `'dedicated'`; see `SessionLockOptions.connection`. */
  readonly connection?: SessionConnection | undefined;
}

/**
 * The transaction-scoped verbs every adapter offers, bound to one database and its defaults.
 * `Tx` is what callbacks receive; `InTx` what `lock`/`tryLock` accept (a transaction only).
 *
 * @example
 * ```ts
 * import type { AdvisoryLocks } from '@pglock/core/adapter';
 *
 * // What an adapter's `advisoryLocks(db)` returns, with its ORM's transaction as `Tx`.
 * declare const locks: AdvisoryLocks<MyTx>;
 * await locks.withLock('report:daily', async (tx) => build(tx));
 * ```
 */
export interface AdvisoryLocks<Tx, InTx = Tx, S extends TransactionSettings = TransactionSettings> {
  /**
   * Runs `fn` in a new transaction whose first statement takes the lock(s); COMMIT (or ROLLBACK when
   * `fn` throws) releases them. Inside a running callback on the same database, or given a
   * transaction, it nests there with a savepoint. Throws `LockNotAcquiredError` when not acquired in
   * time, `TransactionRolledBackError` when PostgreSQL would not commit the callback's work.
   */
  withLock<T>(target: LockTarget, fn: (tx: Tx) => Promise<T>, options?: WithLockOptions<S>): Promise<T>;
  /** Like `withLock`, but resolves `{ acquired: false }` when the lock is taken (tries once unless `timeoutMs`). */
  tryWithLock<T>(
    target: LockTarget,
    fn: (tx: Tx) => Promise<T>,
    options?: WithLockOptions<S>,
  ): Promise<TryResult<T>>;
  /** Takes the lock(s) inside a transaction you opened; held until it ends. */
  lock(tx: InTx, target: LockTarget, options?: LockOptions): Promise<void>;
  /** Tries the lock(s) inside a transaction you opened: `true` when held until it ends. */
  tryLock(tx: InTx, target: LockTarget, options?: LockOptions): Promise<boolean>;
  /** True when any session holds `key` (a snapshot, for dashboards and tests). */
  isLocked(key: LockKeyInput, options?: Pick<LockOptions, 'namespace'>): Promise<boolean>;
  /** Every advisory lock in the current database, holders and waiters. */
  inspectLocks(): Promise<AdvisoryLockInfo[]>;
  /**
   * Runs `fn` at most once per period across every process: in a transaction that tries the name's
   * lock and records the period's run in `pglock_jobs`, so the job's writes and "done for this
   * period" commit together. The schedule is `per` (epoch-aligned periods) or `cron` with a
   * `timeZone` (a period from one cron timestamp to the next); `minIntervalMs` spaces runs out, and
   * the job's `missed` (with `catchUp: 'last'`) tells of periods no run took. Resolves
   * `{ ran: true, value, period, missed }`, or `{ ran: false, reason }` with `'done'` (this period's
   * run committed), `'busy'` (another caller runs it now; it does not wait unless `timeoutMs`) or
   * `'too-soon'` (`minIntervalMs`), or with `retry` `'failed'` (the period's attempts are used up; a
   * call without `minIntervalMs` and `retry` is typed `'done' | 'busy'`). When `fn` throws (or its process dies) everything rolls back, the
   * error reaches the caller unchanged, and the next caller in the period runs it. One name is one
   * schedule: another schedule than the one the job's row records is `ScheduleMismatchError`. A
   * missing table is `LockTableMissingError`, whose message holds the DDL (for a table from an older
   * pglock, the missing column and the upgrade).
   *
   * @example
   * ```ts
   * const result = await locks.runOnce('leaderboard', { per: '15m' }, async (tx) => rebuildLeaderboard(tx));
   * if (!result.ran) console.log(`skipped (${result.reason}) until ${result.period.end.toISOString()}`);
   * const nightly = await locks.runOnce('report', { cron: '0 3 * * *', timeZone: 'Europe/Berlin' }, async (tx, { missed }) =>
   *   buildReport(tx, { missed }),
   * );
   * ```
   */
  runOnce<T>(
    name: string,
    options: RunOnceOptions<S> & { readonly minIntervalMs?: undefined; readonly retry?: undefined },
    fn: (tx: Tx, run: RunOnceContext) => Promise<T>,
  ): Promise<RunOnceResult<T, 'done' | 'busy'>>;
  runOnce<T>(
    name: string,
    options: RunOnceOptions<S>,
    fn: (tx: Tx, run: RunOnceContext) => Promise<T>,
  ): Promise<RunOnceResult<T>>;
  /**
   * Who leads `name` now, without campaigning: `{ term, since, identity, pid, application }`, or
   * `undefined` when no session holds the name's lock. One statement (it works through a
   * transaction-mode pooler), a snapshot.
   *
   * @example
   * ```ts
   * const now = await locks.currentLeader('scheduler');
   * console.log(now === undefined ? 'nobody leads' : `term ${now.term}: ${now.identity} (pid ${now.pid})`);
   * ```
   */
  currentLeader(name: string, options?: CurrentLeaderOptions): Promise<LeaderInfo | undefined>;
  /**
   * Tells `onChange` who leads `name`: once at start, then on every new term and when nobody leads
   * any more, reading `currentLeader` every `pollMs` (default 1000) until `stop()`. Bad options throw
   * from the call (it resolves no promise); a failed reading goes to `onError`.
   *
   * @example
   * ```ts
   * const observer = locks.observeLeader('scheduler', {
   *   onChange: (leader) => console.log(leader ? `leader: ${leader.identity} (term ${leader.term})` : 'no leader'),
   * });
   * process.once('SIGTERM', () => void observer.stop());
   * ```
   */
  observeLeader(name: string, options: ObserveLeaderOptions): LeaderObserver;
}

/**
 * The session-lock verbs of adapters that can pin a connection.
 *
 * @example
 * ```ts
 * import type { AdvisoryLocks, SessionAdvisoryLocks } from '@pglock/core/adapter';
 *
 * declare const locks: AdvisoryLocks<MyTx> & SessionAdvisoryLocks;
 * await locks.withSessionLock('migrations', async (signal) => migrate(signal));
 * ```
 */
export interface SessionAdvisoryLocks {
  /** Takes a session lock on a dedicated connection; throws `LockNotAcquiredError` when not acquired in time. */
  acquireSessionLock(target: LockTarget, options?: SessionLockOptions): Promise<SessionLock>;
  /** Like `acquireSessionLock`, resolving `undefined` when taken (tries once unless `timeoutMs`). */
  tryAcquireSessionLock(target: LockTarget, options?: SessionLockOptions): Promise<SessionLock | undefined>;
  /** Runs `fn(signal)` under a session lock and releases it after; `signal` aborts when the lock is lost. */
  withSessionLock<T>(
    target: LockTarget,
    fn: (signal: AbortSignal) => Promise<T>,
    options?: SessionLockOptions,
  ): Promise<T>;
  /**
   * Campaigns for leadership of `name` until `stop()`: waits for its session lock on the server (no
   * polling), and once elected writes the next `term` (a fencing token) to `pglock_jobs` on the lock's
   * connection and calls `onElected({ term, signal })`. `signal` aborts when the lock is lost or on
   * `stop()`; the campaign then goes on, with backoff. A standby is elected only once PostgreSQL
   * freed the previous leader's lock. Needs a database that can pin a connection (not a transaction,
   * not through a transaction-mode pooler, which `onError` reports).
   *
   * @example
   * ```ts
   * const campaign = locks.leader('scheduler', {
   *   onElected: ({ term, signal }) => startScheduler({ term, signal }),
   * });
   * process.once('SIGTERM', () => void campaign.stop());
   * ```
   */
  leader(name: string, options: LeaderOptions): LeaderCampaign;
}

/**
 * The name of a verb of {@link createAdvisoryLocks}.
 *
 * @example
 * ```ts
 * import type { VerbName } from '@pglock/core/adapter';
 *
 * const verb: VerbName = 'withSessionLock';
 * ```
 */
export type VerbName = keyof (AdvisoryLocks<unknown> & SessionAdvisoryLocks);

/**
 * The names users call the verbs by, where an adapter's idiom renames them (Prisma's `$withLock`,
 * Drizzle's `migrateWithLock` over `withSessionLock`): every message names the function called.
 *
 * @example
 * ```ts
 * import { createAdvisoryLocks, type VerbNames } from '@pglock/core/adapter';
 *
 * const names: VerbNames = { withLock: '$withLock', lock: '$lock' };
 * const locks = createAdvisoryLocks(port, db, {}, names);
 * ```
 */
export type VerbNames = Readonly<Partial<Record<VerbName, string>>>;

/**
 * Every verb as a plain function taking the database (or the transaction) first, typed here once:
 * `Db` is what the transaction verbs take, `Tx` what callbacks get, `InTx` what `lock`/`tryLock` take
 * (a transaction only), `Root` what the session verbs take (a handle that can pin a connection).
 * An adapter exports the verbs whose types need nothing of its ORM as they are
 * (`export const lock = functions.lock`), and types the others (a callback's `tx` that depends on
 * the database's type) in a line over the same function.
 *
 * @example
 * ```ts
 * import type { LockFunctions } from '@pglock/core/adapter';
 *
 * declare const functions: LockFunctions<MyDb, MyTx>;
 * export const lock: LockFunctions<MyDb, MyTx>['lock'] = functions.lock;
 * ```
 */
export interface LockFunctions<
  Db,
  Tx,
  InTx = Tx,
  S extends TransactionSettings = TransactionSettings,
  Root = Db,
> {
  withLock<T>(
    db: Db,
    target: LockTarget,
    fn: (tx: Tx) => Promise<T>,
    options?: WithLockOptions<S>,
  ): Promise<T>;
  tryWithLock<T>(
    db: Db,
    target: LockTarget,
    fn: (tx: Tx) => Promise<T>,
    options?: WithLockOptions<S>,
  ): Promise<TryResult<T>>;
  lock(tx: InTx, target: LockTarget, options?: LockOptions): Promise<void>;
  tryLock(tx: InTx, target: LockTarget, options?: LockOptions): Promise<boolean>;
  isLocked(db: Db, key: LockKeyInput, options?: Pick<LockOptions, 'namespace'>): Promise<boolean>;
  inspectLocks(db: Db): Promise<AdvisoryLockInfo[]>;
  runOnce<T>(
    db: Db,
    name: string,
    options: RunOnceOptions<S>,
    fn: (tx: Tx, run: RunOnceContext) => Promise<T>,
  ): Promise<RunOnceResult<T>>;
  currentLeader(db: Db, name: string, options?: CurrentLeaderOptions): Promise<LeaderInfo | undefined>;
  observeLeader(db: Db, name: string, options: ObserveLeaderOptions): LeaderObserver;
  acquireSessionLock(db: Root, target: LockTarget, options?: SessionLockOptions): Promise<SessionLock>;
  tryAcquireSessionLock(
    db: Root,
    target: LockTarget,
    options?: SessionLockOptions,
  ): Promise<SessionLock | undefined>;
  withSessionLock<T>(
    db: Root,
    target: LockTarget,
    fn: (signal: AbortSignal) => Promise<T>,
    options?: SessionLockOptions,
  ): Promise<T>;
  leader(db: Root, name: string, options: LeaderOptions): LeaderCampaign;
}
