import { InvalidLockOptionsError } from './errors.ts';
import { type AdvisoryLockInfo, inspectLocks, isLocked } from './inspect-locks.ts';
import { type LeaderCampaign, type LeaderOptions, startLeader } from './leader.ts';
import { lockInTransaction } from './lock-in-transaction.ts';
import { type LockKeyInput, lockKey } from './lock-key.ts';
import { checkDuration, type LockOptions, type LockTarget, lockRequest } from './lock-options.ts';
import type { LockPort } from './lock-port.ts';
import { ADVISORY_LOCKS_OPTION_KEYS, checkOptionKeys, IS_LOCKED_OPTION_KEYS } from './option-keys.ts';
import { type RunOnceContext, type RunOnceOptions, type RunOnceResult, runOnce } from './run-once.ts';
import {
  runWithSessionLock,
  type SessionLock,
  type SessionLockOptions,
  takeSessionLock,
} from './session-lock.ts';
import { runLocked, type TryResult, type WithLockOptions } from './transaction-lock.ts';
import { checkTransactionSettings, type TransactionSettings } from './transaction-settings.ts';

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
}

/**
 * The transaction-scoped verbs every adapter offers, bound to one database and its defaults.
 * `Tx` is what callbacks receive; `InTx` what `lock`/`tryLock` accept (a transaction only).
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
   * period" commit together. Resolves `{ ran: true, value, period }`, or `{ ran: false, reason }`
   * with `'done'` (this period's run committed) or `'busy'` (another caller runs it now; it does not
   * wait unless `timeoutMs`). When `fn` throws (or its process dies) everything rolls back, the error
   * reaches the caller unchanged, and the next caller in the period runs it. One name is one
   * schedule: a `per` other than the one the job's row records is `ScheduleMismatchError`. A missing
   * table is `LockTableMissingError`, whose message holds the DDL (for a table from before `per_ms`,
   * the upgrade).
   *
   * @example
   * ```ts
   * const result = await locks.runOnce('leaderboard', { per: '15m' }, async (tx) => rebuildLeaderboard(tx));
   * if (!result.ran) console.log(`skipped (${result.reason}) until ${result.period.end.toISOString()}`);
   * ```
   */
  runOnce<T>(
    name: string,
    options: RunOnceOptions<S>,
    fn: (tx: Tx, run: RunOnceContext) => Promise<T>,
  ): Promise<RunOnceResult<T>>;
}

/** The session-lock verbs of adapters that can pin a connection. */
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

/** The name of a verb of {@link createAdvisoryLocks}. */
export type VerbName = keyof (AdvisoryLocks<unknown> & SessionAdvisoryLocks);

/**
 * The names users call the verbs by, where an adapter's idiom renames them (Prisma's `$withLock`,
 * Drizzle's `migrateWithLock` over `withSessionLock`): every message names the function called.
 */
export type VerbNames = Readonly<Partial<Record<VerbName, string>>>;

/**
 * Builds every verb of an adapter from its {@link LockPort}, bound to `db` and `defaults`. Defaults
 * are validated here, so a factory with a bad default fails where it is made. `names` renames verbs
 * in messages.
 *
 * @example
 * ```ts
 * import { createAdvisoryLocks } from '@pglock/core/adapter';
 *
 * export function advisoryLocks(db: MyDb, defaults?: AdvisoryLocksOptions) {
 *   return createAdvisoryLocks(myPort, db, defaults);
 * }
 * ```
 */
export function createAdvisoryLocks<Db, Tx, InTx = Tx, S extends TransactionSettings = TransactionSettings>(
  port: LockPort<Db, Tx>,
  db: Db,
  defaults: AdvisoryLocksOptions<S> = {},
  names: VerbNames = {},
): AdvisoryLocks<Tx, InTx, S> & SessionAdvisoryLocks {
  const name = (verb: VerbName): string => names[verb] ?? verb;
  if (typeof defaults !== 'object' || defaults === null) {
    throw new InvalidLockOptionsError('advisoryLocks: defaults must be an object of options.');
  }
  if (db === null || (typeof db !== 'object' && typeof db !== 'function')) {
    throw new InvalidLockOptionsError(
      `advisoryLocks: ${port.name} needs a database handle (got ${String(db)}).`,
    );
  }
  // Validate every default once, here, with a representative call.
  const known = defaultsKeys(port);
  checkOptionKeys(defaults, known, 'advisoryLocks');
  lockRequest('pglock', defaults, undefined, 'advisoryLocks', known);
  checkTransactionSettings(defaults.transaction, port.transactionSettings, 'advisoryLocks');
  if (defaults.heartbeatMs !== undefined)
    checkDuration(defaults.heartbeatMs, 'heartbeatMs', 'advisoryLocks', 10);
  const { heartbeatMs, ...withLockDefaults } = defaults;
  const { transaction: _settings, ...lockDefaults } = withLockDefaults;
  const scope = { port, db, defaults: withLockDefaults as WithLockOptions };
  const lockScope = { port, db, defaults: lockDefaults as WithLockOptions };
  const sessionScope = {
    port: port as LockPort<Db, unknown>,
    db,
    defaults: { ...lockDefaults, heartbeatMs },
  };
  const query = (s: Parameters<LockPort<Db, Tx>['query']>[1]) => port.query(db, s);
  return {
    withLock: (target, fn, options) =>
      runLocked(scope, target, fn, options, false, name('withLock')) as Promise<never>,
    tryWithLock: (target, fn, options) =>
      runLocked(scope, target, fn, options, true, name('tryWithLock')) as Promise<never>,
    lock: async (tx, target, options) => {
      await lockInTransaction(lockScope, tx, target, options, false, name('lock'));
    },
    tryLock: (tx, target, options) =>
      lockInTransaction(lockScope, tx, target, options, true, name('tryLock')),
    // An async function: a bad key or option rejects, as with every verb, rather than throw from the call.
    isLocked: async (key, options) => {
      const verb = name('isLocked');
      if (options !== undefined) {
        if (typeof options !== 'object' || options === null) {
          throw new InvalidLockOptionsError(
            `${verb}: options must be an object (got ${options === null ? 'null' : typeof options}); omit it for the defaults.`,
          );
        }
        checkOptionKeys(options, IS_LOCKED_OPTION_KEYS, verb);
      }
      return isLocked(query, lockKey(key, { namespace: options?.namespace ?? lockDefaults.namespace }));
    },
    inspectLocks: () => inspectLocks(query),
    acquireSessionLock: (target, options) =>
      takeSessionLock(
        sessionScope,
        target,
        options,
        false,
        name('acquireSessionLock'),
      ) as Promise<SessionLock>,
    tryAcquireSessionLock: (target, options) =>
      takeSessionLock(sessionScope, target, options, true, name('tryAcquireSessionLock')),
    withSessionLock: async (target, fn, options) => {
      if (typeof fn !== 'function')
        throw new InvalidLockOptionsError(`${name('withSessionLock')}: the callback must be a function.`);
      const handle = (await takeSessionLock(
        sessionScope,
        target,
        options,
        false,
        name('withSessionLock'),
      )) as SessionLock;
      return runWithSessionLock(handle, fn);
    },
    runOnce: (job, options, fn) => runOnce(scope, job, options, fn, name('runOnce')),
    leader: (job, options) => startLeader(sessionScope, job, options, name('leader')),
  };
}

/** The defaults a factory of `port` takes: core's (the session heartbeat only with session locks) and the adapter's. */
function defaultsKeys(port: LockPort<never, unknown>): readonly string[] {
  let keys = knownDefaults.get(port);
  if (keys === undefined) {
    keys = ADVISORY_LOCKS_OPTION_KEYS.filter((key) => key !== 'heartbeatMs' || port.pin !== undefined);
    keys = [...keys, ...(port.factoryOptions ?? [])];
    knownDefaults.set(port, keys);
  }
  return keys;
}

const knownDefaults = new WeakMap<object, readonly string[]>();

/**
 * Every verb of a handle that is not one (`null`, a string): each rejects (`leader`, which resolves
 * no promise, throws) with `InvalidLockOptionsError` naming the function called, before any SQL.
 */
function refusingVerbs<Tx, InTx, S extends TransactionSettings>(
  port: LockPort<never, unknown>,
  db: unknown,
  names: VerbNames,
): AdvisoryLocks<Tx, InTx, S> & SessionAdvisoryLocks {
  const refused = (verb: VerbName) =>
    new InvalidLockOptionsError(
      `${names[verb] ?? verb}: ${port.name} needs a database handle (got ${db === null ? 'null' : typeof db === 'string' ? JSON.stringify(db) : String(db)}); pass the database (or the transaction) you made with it.`,
    );
  const reject = (verb: VerbName) => () => Promise.reject(refused(verb));
  return {
    withLock: reject('withLock'),
    tryWithLock: reject('tryWithLock'),
    lock: reject('lock'),
    tryLock: reject('tryLock'),
    isLocked: reject('isLocked'),
    inspectLocks: reject('inspectLocks'),
    runOnce: reject('runOnce'),
    acquireSessionLock: reject('acquireSessionLock'),
    tryAcquireSessionLock: reject('tryAcquireSessionLock'),
    withSessionLock: reject('withSessionLock'),
    leader: () => {
      throw refused('leader');
    },
  };
}

/**
 * The same verbs as plain functions taking the database first (`withLock(db, …)`), for an adapter's
 * one-line exports. A database's factory is made once and kept with it; `defaults` (validated here,
 * at once) and `names` are every such factory's, for an adapter whose idiom binds them elsewhere
 * (Prisma's extension binds them when it is made, not per client).
 *
 * @example
 * ```ts
 * import { lockVerbs } from '@pglock/core/adapter';
 *
 * const verbs = lockVerbs(myPort);
 * export const withLock = <T>(db: MyDb, target: LockTarget, fn: (tx: MyTx) => Promise<T>) => verbs(db).withLock(target, fn);
 * ```
 */
export function lockVerbs<Db, Tx, InTx = Tx, S extends TransactionSettings = TransactionSettings>(
  port: LockPort<Db, Tx>,
  defaults?: AdvisoryLocksOptions<S>,
  names?: VerbNames,
): (db: Db) => AdvisoryLocks<Tx, InTx, S> & SessionAdvisoryLocks {
  // Bad defaults fail here, where the verbs are made, with a representative handle.
  if (defaults !== undefined) createAdvisoryLocks(port, {} as Db, defaults);
  const made = new WeakMap<object, AdvisoryLocks<Tx, InTx, S> & SessionAdvisoryLocks>();
  return (db) => {
    // Never a throw from here: the verbs of a bad handle reject, as every verb's bad input does.
    if (db === null || (typeof db !== 'object' && typeof db !== 'function')) {
      return refusingVerbs<Tx, InTx, S>(port as LockPort<never, unknown>, db, names ?? {});
    }
    let locks = made.get(db as object);
    if (locks === undefined) {
      locks = createAdvisoryLocks<Db, Tx, InTx, S>(port, db, defaults, names);
      made.set(db as object, locks);
    }
    return locks;
  };
}
