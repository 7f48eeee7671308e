import { currentLeaderKey, readCurrentLeader } from './current-leader.ts';
import { InvalidLockOptionsError } from './errors.ts';
import { inspectLocks, isLocked } from './inspect-locks.ts';
import { startLeader } from './leader.ts';
import { startLeaderObserver } from './leader-observer.ts';
import { lockInTransaction } from './lock-in-transaction.ts';
import { lockKey } from './lock-key.ts';
import { checkDuration, lockRequest } from './lock-options.ts';
import type { LockPort } from './lock-port.ts';
import { ADVISORY_LOCKS_OPTION_KEYS, checkOptionKeys, IS_LOCKED_OPTION_KEYS } from './option-keys.ts';
import { type RunOnceContext, type RunOnceOptions, runOnce } from './run-once.ts';
import {
  checkSessionConnection,
  runWithSessionLock,
  type SessionLock,
  takeSessionLock,
} from './session-lock.ts';
import { runLocked, type WithLockOptions } from './transaction-lock.ts';
import { checkTransactionSettings, type TransactionSettings } from './transaction-settings.ts';
import type {
  AdvisoryLocks,
  AdvisoryLocksOptions,
  LockFunctions,
  SessionAdvisoryLocks,
  VerbName,
  VerbNames,
} from './verbs.ts';

export type {
  AdvisoryLocks,
  AdvisoryLocksOptions,
  LockFunctions,
  SessionAdvisoryLocks,
  VerbName,
  VerbNames,
} from './verbs.ts';

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
  const connection =
    defaults.connection === undefined
      ? undefined
      : checkSessionConnection(defaults.connection, 'advisoryLocks');
  const { heartbeatMs, connection: _connection, ...withLockDefaults } = defaults;
  const { transaction: _settings, ...lockDefaults } = withLockDefaults;
  const scope = { port, db, defaults: withLockDefaults as WithLockOptions };
  const lockScope = { port, db, defaults: lockDefaults as WithLockOptions };
  const sessionScope = {
    port: port as LockPort<Db, unknown>,
    db,
    defaults: { ...lockDefaults, heartbeatMs, connection },
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
    // One implementation for both overloads: without minIntervalMs and retry it never answers 'too-soon' or 'failed'.
    runOnce: ((
      job: string,
      options: RunOnceOptions<S>,
      fn: (tx: Tx, run: RunOnceContext) => Promise<unknown>,
    ) => runOnce(scope, job, options, fn, name('runOnce'))) as AdvisoryLocks<Tx, InTx, S>['runOnce'],
    currentLeader: async (job, options) => {
      const verb = name('currentLeader');
      return readCurrentLeader(query, currentLeaderKey(job, options, lockDefaults.namespace, verb), verb);
    },
    observeLeader: (job, options) => {
      const verb = name('observeLeader');
      const read = (key: Parameters<typeof readCurrentLeader>[1]) => readCurrentLeader(query, key, verb);
      return startLeaderObserver(read, job, options, lockDefaults.namespace, verb);
    },
    leader: (job, options) => startLeader(sessionScope, job, options, name('leader')),
  };
}

/** The defaults a factory of `port` takes: core's (the session heartbeat and connection only with session locks) and the adapter's. */
function defaultsKeys(port: LockPort<never, unknown>): readonly string[] {
  let keys = knownDefaults.get(port);
  if (keys === undefined) {
    keys = ADVISORY_LOCKS_OPTION_KEYS.filter(
      (key) => (key !== 'heartbeatMs' && key !== 'connection') || port.pin !== undefined,
    );
    keys = [...keys, ...(port.factoryOptions ?? [])];
    knownDefaults.set(port, keys);
  }
  return keys;
}

const knownDefaults = new WeakMap<object, readonly string[]>();

/**
 * Every verb of a handle that is not one (`null`, a string): each rejects (`leader` and
 * `observeLeader`, which resolve no promise, throw) with `InvalidLockOptionsError` naming the function called, before any SQL.
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
    currentLeader: reject('currentLeader'),
    observeLeader: () => {
      throw refused('observeLeader');
    },
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

/**
 * Builds {@link LockFunctions} over a port: each call runs the verb of the handle's factory
 * ({@link lockVerbs}: made once per handle, without defaults). `lock(tx)` and `tryLock(tx)` use the
 * transaction's own, as the handle core asks the port about.
 *
 * @example
 * ```ts
 * import { lockFunctions } from '@pglock/core/adapter';
 *
 * const functions = lockFunctions<MyDb, MyTx>(myPort);
 * export const lock = functions.lock; // (tx: MyTx, target, options?) => Promise<void>
 * ```
 */
export function lockFunctions<
  Db,
  Tx,
  InTx = Tx,
  S extends TransactionSettings = TransactionSettings,
  Root = Db,
>(port: LockPort<Db, Tx>): LockFunctions<Db, Tx, InTx, S, Root> {
  const verbs = lockVerbs<Db, Tx, InTx, S>(port);
  // A transaction or a session handle is a handle of the port's too: the casts only widen.
  const of = (handle: InTx | Root) => verbs(handle as unknown as Db);
  return {
    withLock: (db, target, fn, options) => verbs(db).withLock(target, fn, options),
    tryWithLock: (db, target, fn, options) => verbs(db).tryWithLock(target, fn, options),
    lock: (tx, target, options) => of(tx).lock(tx, target, options),
    tryLock: (tx, target, options) => of(tx).tryLock(tx, target, options),
    isLocked: (db, key, options) => verbs(db).isLocked(key, options),
    inspectLocks: (db) => verbs(db).inspectLocks(),
    runOnce: (db, name, options, fn) => verbs(db).runOnce(name, options, fn),
    currentLeader: (db, name, options) => verbs(db).currentLeader(name, options),
    observeLeader: (db, name, options) => verbs(db).observeLeader(name, options),
    acquireSessionLock: (db, target, options) => of(db).acquireSessionLock(target, options),
    tryAcquireSessionLock: (db, target, options) => of(db).tryAcquireSessionLock(target, options),
    withSessionLock: (db, target, fn, options) => of(db).withSessionLock(target, fn, options),
    leader: (db, name, options) => of(db).leader(name, options),
  };
}
