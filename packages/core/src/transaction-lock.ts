import { assertCancellable } from './cancel-wait.ts';
import { InvalidLockOptionsError, LockUsageError } from './errors.ts';
import type { LockOptions, LockRequest, LockTarget } from './lock-options.ts';
import { lockRequest } from './lock-options.ts';
import type { LockPort, PortConnection } from './lock-port.ts';
import { abortedError, heldBySessionError } from './messages.ts';
import { nested } from './nested-lock.ts';
import {
  contextFor,
  currentContext,
  describe,
  heldBySession,
  type LockContext,
  settledTransaction,
} from './nesting.ts';
import { WITH_LOCK_OPTION_KEYS } from './option-keys.ts';
import { ownTransaction } from './own-transaction.ts';
import {
  type CheckedTransactionSettings,
  checkTransactionSettings,
  NO_TRANSACTION_SETTINGS,
  type TransactionSettings,
} from './transaction-settings.ts';

/** Result of a try: the callback's value when the lock was taken. */
export type TryResult<T> = { readonly acquired: true; readonly value: T } | { readonly acquired: false };

/**
 * Options of `withLock` and `tryWithLock`: core's, plus the settings of the transaction it opens.
 *
 * @example
 * ```ts
 * import type { WithLockOptions } from '@pglock/core';
 *
 * const options: WithLockOptions = { timeoutMs: 1_000, transaction: { isolationLevel: 'serializable' } };
 * ```
 */
export interface WithLockOptions<S extends TransactionSettings = TransactionSettings> extends LockOptions {
  /** How the transaction is opened. Refused when the call nests in a running transaction. */
  readonly transaction?: S | undefined;
}

/** What the transaction verbs of one factory share. */
export interface VerbScope<Db, Tx> {
  readonly port: LockPort<Db, Tx>;
  readonly db: Db;
  readonly defaults: WithLockOptions;
}

const tryDefaultsCache = new WeakMap<object, WithLockOptions>();

/** The factory defaults for a try function: a try tries once unless the call itself sets `timeoutMs`. */
function tryDefaults(defaults: WithLockOptions): WithLockOptions {
  let cached = tryDefaultsCache.get(defaults);
  if (cached === undefined) {
    cached = { ...defaults, timeoutMs: 0 };
    tryDefaultsCache.set(defaults, cached);
  }
  return cached;
}

export function requestFor(
  target: LockTarget,
  options: LockOptions | undefined,
  defaults: LockOptions,
  attempt: boolean,
  verb: string,
  known: readonly string[],
): LockRequest {
  return lockRequest(target, options, attempt ? tryDefaults(defaults) : defaults, verb, known);
}

export function settingsFor<Db, Tx>(
  scope: VerbScope<Db, Tx>,
  options: WithLockOptions | undefined,
  verb: string,
): CheckedTransactionSettings {
  const given = options?.transaction;
  const fallback = scope.defaults.transaction;
  if (given === undefined && fallback === undefined) return NO_TRANSACTION_SETTINGS;
  // Anything but a plain object (`null` included) goes to the check as given, which refuses it:
  // `given ?? fallback` let `transaction: null` through as "no settings" (found by the kit).
  const mergeable = typeof given === 'object' && given !== null && !Array.isArray(given);
  const merged =
    given === undefined || fallback === undefined || !mergeable
      ? given === undefined
        ? fallback
        : given
      : { ...fallback, ...Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)) };
  return checkTransactionSettings(merged, scope.port.transactionSettings, verb);
}

/**
 * `withLock` / `tryWithLock`: `fn` runs in a transaction whose first statement takes the lock.
 * Inside a running callback on the same database, or given a handle that is already a transaction,
 * the lock is taken on that transaction's connection inside a savepoint instead.
 */
export function runLocked<Db, Tx, T>(
  scope: VerbScope<Db, Tx>,
  target: LockTarget,
  fn: (tx: Tx) => Promise<T>,
  options: WithLockOptions | undefined,
  attempt: boolean,
  verb: string,
): Promise<T | TryResult<T>> {
  // Not an async function: the checks throw synchronously into a rejection, and the transaction's
  // promise is handed back as is, without another async layer on every call.
  try {
    return startLocked(scope, target, fn, options, attempt, verb);
  } catch (error) {
    return Promise.reject(error);
  }
}

function startLocked<Db, Tx, T>(
  scope: VerbScope<Db, Tx>,
  target: LockTarget,
  fn: (tx: Tx) => Promise<T>,
  options: WithLockOptions | undefined,
  attempt: boolean,
  verb: string,
): Promise<T | TryResult<T>> {
  if (typeof fn !== 'function')
    throw new InvalidLockOptionsError(`${verb}: the callback must be a function.`);
  const { port, db } = scope;
  const settings = settingsFor(scope, options, verb);
  let request = requestFor(target, options, scope.defaults, attempt, verb, WITH_LOCK_OPTION_KEYS);
  // Read once: outside every callback (most calls) there is nothing to walk.
  const current = currentContext();
  const selfHeld = current && heldBySession(db, request.keys, request.shared, current);
  if (selfHeld !== undefined) throw heldBySessionError(request, verb, selfHeld);
  let nestIn = current && contextFor(db, current);
  if (nestIn === undefined) {
    // Before the port looks at the handle: a pooled client may be inside another caller's transaction by now.
    const settled = settledTransaction(db, current);
    if (settled !== undefined) throw settledTransactionError(settled, request, verb);
    nestIn = outerTransaction(port, db, current);
  }
  if (request.timeoutMs === undefined && port.defaultTimeoutMs !== undefined) {
    // A nested call waits inside a running transaction, as lock(tx) does.
    const fallback = port.defaultTimeoutMs(nestIn === undefined ? 'withLock' : 'lock', settings, db);
    if (fallback !== undefined) request = { ...request, timeoutMs: fallback };
  }
  assertCancellable(port, db, request, verb);
  if (request.signal?.aborted) throw abortedError(request, verb, request.signal.reason);
  if (nestIn !== undefined) {
    // The call's own settings cannot apply; the factory's defaults are for the transactions it opens.
    if (options?.transaction !== undefined && settings !== NO_TRANSACTION_SETTINGS) {
      throw new InvalidLockOptionsError(
        `${verb}: transaction settings apply to a new transaction, but this call runs inside one (it nests with a savepoint there). Drop the transaction option, or call ${verb} outside the running transaction.`,
      );
    }
    return nested(scope, nestIn, { request, fn: fn as (tx: unknown) => Promise<T>, attempt, verb });
  }
  return ownTransaction(scope, { request, settings, fn, attempt, verb, parent: current });
}

/**
 * The connection a call on `scope` made now runs on when it nests: the running callback's transaction
 * on that database, or `db` itself when it is a transaction. `undefined`: the call opens its own.
 */
export function nestingConnection<Db, Tx>(scope: VerbScope<Db, Tx>): PortConnection | undefined {
  const current = currentContext();
  return (current && contextFor(scope.db, current))?.connection ?? scope.port.connectionOf(scope.db);
}

/** `db` itself is a transaction (or a connection inside one) the caller opened. */
export function outerTransaction<Db, Tx>(
  port: LockPort<Db, Tx>,
  db: Db,
  current: LockContext | undefined,
): LockContext | undefined {
  const connection = port.connectionOf(db);
  if (connection === undefined) return undefined;
  return {
    root: db as object,
    tx: db,
    connection,
    depth: 0,
    parent: current,
    nested: undefined,
    open: true,
    activity: 0,
    lost: undefined,
    request: undefined,
    verb: undefined,
  };
}

/** A lock call given the transaction of a callback that has settled (from work it left running). */
export function settledTransactionError(
  settled: LockContext,
  request: LockRequest,
  verb: string,
): LockUsageError {
  return new LockUsageError(
    `${verb}: this is the transaction of the callback under the ${describe(settled)}, and that callback has settled: the transaction has ended and its connection may serve another caller by now. Call ${verb} on the database for a transaction of its own, or make the call inside that callback and await it.`,
    { keys: request.keys },
  );
}
