import { acquire, budgetLeft } from './acquire.ts';
import { assertCancellable, cancellerFor } from './cancel-wait.ts';
import { startTrace } from './diagnostics.ts';
import {
  InvalidLockOptionsError,
  LockAbortedError,
  LockUsageError,
  TransactionRolledBackError,
} from './errors.ts';
import type { LockOptions, LockRequest, LockTarget } from './lock-options.ts';
import { lockRequest } from './lock-options.ts';
import type { LockPort, PortConnection, TransactionRequest } from './lock-port.ts';
import { abortedError, describeKeys, heldBySessionError, notAcquiredError } from './messages.ts';
import {
  contextFor,
  contextOfTransaction,
  currentContext,
  describe,
  enterContext,
  heldBySession,
  type LockContext,
  rememberTransaction,
  runInContext,
  settledTransaction,
} from './nesting.ts';
import { LOCK_OPTION_KEYS, WITH_LOCK_OPTION_KEYS } from './option-keys.ts';
import { cell } from './row-cell.ts';
import { watchSavepoint } from './savepoint-watch.ts';
import { heldStatement } from './session-lock.ts';
import { SqlState, sqlStateOf } from './sql-state.ts';
import { startBound } from './start-bound.ts';
import { type Statement, statementText } from './statement.ts';
import {
  type CheckedTransactionSettings,
  checkTransactionSettings,
  NO_TRANSACTION_SETTINGS,
  type TransactionSettings,
} from './transaction-settings.ts';
import { enterQueue } from './wait-queue.ts';

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

function requestFor(
  target: LockTarget,
  options: LockOptions | undefined,
  defaults: LockOptions,
  attempt: boolean,
  verb: string,
  known: readonly string[],
): LockRequest {
  return lockRequest(target, options, attempt ? tryDefaults(defaults) : defaults, verb, known);
}

function settingsFor<Db, Tx>(
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

// Private: thrown from the transaction body so the ORM rolls back a try that found the lock taken.
class NotTaken {
  constructor(readonly error: Error) {}
}

const failedCheck = statementText('SELECT 1 AS ok').bind([]);
/** The request of most transactions (no settings, no bound), made once. */
const PLAIN_TRANSACTION: TransactionRequest = Object.freeze({
  settings: NO_TRANSACTION_SETTINGS,
  waitMs: undefined,
});

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
    return nested(scope, nestIn, request, fn as (tx: unknown) => Promise<T>, attempt, verb);
  }
  return ownTransaction(scope, request, settings, fn, attempt, verb, current);
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
function outerTransaction<Db, Tx>(
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
function settledTransactionError(settled: LockContext, request: LockRequest, verb: string): LockUsageError {
  return new LockUsageError(
    `${verb}: this is the transaction of the callback under the ${describe(settled)}, and that callback has settled: the transaction has ended and its connection may serve another caller by now. Call ${verb} on the database for a transaction of its own, or make the call inside that callback and await it.`,
    { keys: request.keys },
  );
}

async function ownTransaction<Db, Tx, T>(
  scope: VerbScope<Db, Tx>,
  request: LockRequest,
  settings: CheckedTransactionSettings,
  fn: (tx: Tx) => Promise<T>,
  attempt: boolean,
  verb: string,
  parent: LockContext | undefined,
): Promise<T | TryResult<T>> {
  const { port, db } = scope;
  const deadline =
    request.timeoutMs === undefined || request.timeoutMs === 0
      ? undefined
      : performance.now() + request.timeoutMs;
  let leaveQueue: (() => void) | undefined;
  if (request.timeoutMs !== 0) {
    const entered = enterQueue(db as object, request.keys, request.shared, deadline, request.signal);
    const turn = typeof entered === 'function' ? entered : await entered;
    if (turn === 'timeout') {
      if (attempt) return { acquired: false };
      throw notAcquiredError(request, verb);
    }
    if (turn === 'aborted') throw abortedError(request, verb, request.signal?.reason);
    leaveQueue = turn;
  }
  const trace = startTrace(request, 'transaction');
  let acquired = false;
  // The pool's wait and the ORM's BEGIN come out of the same budget, and the signal ends them too.
  // Most calls have neither a deadline nor a signal: no bound, and no closures built for one.
  const bound =
    deadline === undefined && request.signal === undefined
      ? undefined
      : startBound(
          deadline,
          request.signal,
          () => new NotTaken(notAcquiredError(request, verb)),
          () => abortedError(request, verb, request.signal?.reason),
        );
  try {
    const running = port.transaction(
      db,
      settings === NO_TRANSACTION_SETTINGS && request.timeoutMs === undefined
        ? PLAIN_TRANSACTION
        : { settings, waitMs: deadline === undefined ? request.timeoutMs : budgetLeft(deadline) },
      async (tx, connection) => {
        if (bound !== undefined && !bound.enter()) throw new NotTaken(notAcquiredError(request, verb));
        try {
          // Most calls have no signal: no canceller, and no await for one.
          const cancel =
            request.signal === undefined ? undefined : await cancellerFor(port, db, connection, request);
          acquired = await acquire({
            connection,
            request,
            scope: 'transaction',
            deadline,
            ownsTransaction: true,
            cancel,
            verb,
            trace,
          });
        } finally {
          // The server wait is over: the next caller of this process may start its own.
          leaveQueue?.();
          leaveQueue = undefined;
        }
        if (!acquired) throw new NotTaken(notAcquiredError(request, verb));
        const context: LockContext = {
          root: db as object,
          tx,
          connection,
          depth: 1,
          // The context the call was made in (another database's callback, a session lock's): a
          // later call on that database from this callback still finds its transaction.
          parent,
          nested: undefined,
          open: true,
          activity: 0,
          lost: undefined,
          request,
          verb,
        };
        if (!port.reusesTransactionHandle) rememberTransaction(context);
        // Rejects after the callback if it left a nested call running, or its work beside one was undone.
        const result = await runInContext(context, fn, tx);
        if (!transactionOpen(connection)) await assertNotFailed(port, connection, request, verb, false);
        return result;
      },
    );
    const value = bound === undefined ? await running : await bound.wait(running);
    return attempt ? { acquired: true, value } : value;
  } catch (error) {
    if (error instanceof NotTaken) {
      if (attempt) return { acquired: false };
      throw error.error;
    }
    throw error;
  } finally {
    leaveQueue?.();
    if (acquired) trace.released();
  }
}

/** The driver says, without a round trip, that the transaction is fine (the common case). */
function transactionOpen(connection: PortConnection): boolean {
  const status = connection.transactionStatus?.();
  return status === 'transaction' || status === 'idle';
}

/**
 * The transaction has failed in PostgreSQL (a statement in it failed and the callback caught the
 * error): its COMMIT would be a ROLLBACK. Say so rather than resolve as if the work was written.
 */
async function assertNotFailed<Db, Tx>(
  port: LockPort<Db, Tx>,
  connection: PortConnection,
  request: LockRequest,
  verb: string,
  savepoint: boolean,
): Promise<void> {
  const status = connection.transactionStatus?.();
  if (status === 'transaction' || status === 'idle') return;
  let cause: unknown;
  if (status === undefined) {
    if ((connection.reportsFailedCommit ?? port.reportsFailedCommit) && !savepoint) return;
    try {
      await connection.query(failedCheck);
      return;
    } catch (error) {
      if (sqlStateOf(error) !== SqlState.inFailedTransaction) throw error;
      cause = error;
    }
  }
  throw rolledBackError(request, verb, savepoint, cause);
}

function rolledBackError(
  request: LockRequest,
  verb: string,
  savepoint: boolean,
  cause: unknown,
): TransactionRolledBackError {
  const what = savepoint ? 'rolled back to its savepoint' : 'rolled back';
  return new TransactionRolledBackError(
    `${verb}: the callback under the ${describeKeys(request)} resolved, but a statement in its transaction had failed, so PostgreSQL would not commit it: the transaction was ${what} and nothing it wrote was saved. Let the statement's error leave the callback, or wrap the statement that may fail in a nested ${verb} (a savepoint).`,
    { keys: request.keys, cause },
  );
}

const savepoints: Statement[][] = [];

/** `SAVEPOINT`, `RELEASE` and `ROLLBACK TO` for nesting depth `depth` (fixed names, built once). */
function savepointStatements(depth: number): Statement[] {
  let statements = savepoints[depth];
  if (statements === undefined) {
    const name = `pglock_nested_${depth}`;
    statements = [
      statementText(`SAVEPOINT ${name}`).bind([]),
      statementText(`RELEASE SAVEPOINT ${name}`).bind([]),
      statementText(`ROLLBACK TO SAVEPOINT ${name}`).bind([]),
    ];
    savepoints[depth] = statements;
  }
  return statements;
}

function nested<Db, Tx, T>(
  scope: VerbScope<Db, Tx>,
  outer: LockContext,
  request: LockRequest,
  fn: (tx: unknown) => Promise<T>,
  attempt: boolean,
  verb: string,
): Promise<T | TryResult<T>> {
  const running = outer.nested;
  if (running !== undefined) {
    throw new LockUsageError(
      `${verb}: another pglock call (${running.context.verb} on the ${describe(running.context)}) is already running on this transaction; nested calls on one transaction run one at a time. Await it before starting the next, or run independent work outside the callback.`,
      { keys: request.keys },
    );
  }
  const context: LockContext = {
    root: outer.root,
    tx: outer.tx,
    connection: outer.connection,
    depth: outer.depth + 1,
    parent: outer,
    nested: undefined,
    open: true,
    activity: 0,
    lost: undefined,
    request,
    verb,
  };
  let end!: () => void;
  const ended = new Promise<void>((resolve) => {
    end = resolve;
  });
  // Set at once: a second call made before this one's first await is refused, and the outer callback
  // settling from now on waits for this call.
  const awaiting = new WeakSet<object>();
  outer.nested = { context, ended, awaiting };
  // pglock's own statements run in the call's context, not the outer callback's: the savepoint's watch
  // counts only the outer callback's own code.
  const call = enterContext(
    context,
    () => inSavepoint(scope, outer, context, request, fn, attempt, verb, end),
    undefined,
  );
  awaiting.add(call);
  return call;
}

/** The body of a nested call: savepoint, lock, callback, release (or roll back to the savepoint). */
async function inSavepoint<Db, Tx, T>(
  scope: VerbScope<Db, Tx>,
  outer: LockContext,
  context: LockContext,
  request: LockRequest,
  fn: (tx: unknown) => Promise<T>,
  attempt: boolean,
  verb: string,
  end: () => void,
): Promise<T | TryResult<T>> {
  const { connection, depth } = context;
  const [open, release, rollback] = savepointStatements(depth) as [Statement, Statement, Statement];
  const deadline =
    request.timeoutMs === undefined || request.timeoutMs === 0
      ? undefined
      : performance.now() + request.timeoutMs;
  const trace = startTrace(request, 'transaction');
  let acquired = false;
  let ranBeside: (() => readonly LockContext[]) | undefined;
  // Whatever the outer callbacks' own code sent while the savepoint was open is undone with it.
  const rollBack = async (quiet: boolean) => {
    for (const lost of ranBeside?.() ?? []) lost.lost ??= lostWorkError(lost, context);
    if (quiet) {
      await connection.query(rollback).catch(() => undefined);
      await connection.query(release).catch(() => undefined);
    } else {
      await connection.query(rollback);
      await connection.query(release);
    }
  };
  try {
    // The caller's code runs on to its first await before this call sends anything: a statement it
    // sends right after the call goes before the savepoint, not into it, and its `await` of this
    // call is made before the watch starts.
    await undefined;
    if (!outer.open) throw settledOuterError(outer, context, false);
    ranBeside = watchSavepoint(outer);
    await connection.query(open);
    try {
      const cancel =
        request.signal === undefined
          ? undefined
          : await cancellerFor(scope.port, scope.db, connection, request);
      acquired = await acquire({
        connection,
        request,
        scope: 'transaction',
        deadline,
        ownsTransaction: true,
        cancel,
        verb,
        trace,
      });
    } catch (error) {
      await rollBack(true);
      throw error;
    }
    if (!acquired) {
      await rollBack(false);
      if (attempt) return { acquired: false };
      throw notAcquiredError(request, verb);
    }
    if (!outer.open) {
      await rollBack(true);
      throw settledOuterError(outer, context, false);
    }
    let value: T;
    try {
      value = await runInContext(context, fn, outer.tx);
      if (!outer.open) throw settledOuterError(outer, context, true);
      if (!transactionOpen(connection)) await assertNotFailed(scope.port, connection, request, verb, true);
    } catch (error) {
      await rollBack(true);
      throw error;
    }
    try {
      await connection.query(release);
    } catch (error) {
      // The driver's status can lag behind a failure the callback caught (node-postgres settles the
      // failed query before the ReadyForQuery that carries the status, which can come in a later
      // read), so the check above passed and RELEASE failed in the aborted transaction. Roll back
      // to the savepoint as for any failed nested callback, so the outer transaction goes on
      // (found by the kit's nested rolled-back test under load).
      await rollBack(true);
      if (sqlStateOf(error) === SqlState.inFailedTransaction)
        throw rolledBackError(request, verb, true, error);
      throw error;
    }
    return attempt ? { acquired: true, value } : value;
  } finally {
    // Released: what the outer callbacks sent meanwhile is theirs (ends the watch if still on).
    ranBeside?.();
    context.open = false;
    outer.nested = undefined;
    end();
    // The caller's own transaction stands for this call only: a continuation left running by the
    // callback goes through the transaction's own check next time (it may have ended by then).
    if (outer.depth === 0) outer.open = false;
    // A nested lock lives until the outer transaction ends; pglock does not see that end.
    if (acquired) trace.released();
  }
}

/** A nested call whose outer callback settled before (`ran` false) or while its own callback ran. */
function settledOuterError(outer: LockContext, context: LockContext, ran: boolean): LockUsageError {
  const verb = context.verb ?? 'withLock';
  const what = ran
    ? "returned while this call's callback ran; that transaction is rolled back, so nothing this callback wrote was saved"
    : "had already returned, so its transaction is ending: this call's callback did not run";
  return new LockUsageError(
    `${verb}: the callback this call nests in (under the ${describe(outer)}) ${what}. Await the nested call inside that callback, or make the call outside it for a transaction of its own.`,
    { keys: context.request?.keys },
  );
}

/** The callback of `lost` ran other work while the nested call of `inner` rolled back to its savepoint. */
function lostWorkError(lost: LockContext, inner: LockContext): LockUsageError {
  return new LockUsageError(
    `${lost.verb ?? 'withLock'}: the nested ${inner.verb ?? 'call'} on the ${describe(inner)} rolled back to its savepoint while this callback (under the ${describe(lost)}) ran other work on the same transaction: what that work sent went into the savepoint and may have been undone with it, so pglock rolled the whole transaction back instead of committing. Await each nested call before the callback does anything else.`,
    { keys: lost.request?.keys },
  );
}

const lockDefaultsCache = new WeakMap<object, LockOptions>();

/** The factory defaults without `transaction` (a lock call opens none), made once per factory. */
function lockDefaultsOf(defaults: WithLockOptions): LockOptions {
  let cached = lockDefaultsCache.get(defaults);
  if (cached === undefined) {
    const { transaction: _settings, ...rest } = defaults;
    cached = rest;
    lockDefaultsCache.set(defaults, cached);
  }
  return cached;
}

/** `lock` / `tryLock`: inside a transaction the caller opened (or a pglock callback's). */
export async function lockInTransaction<Db, Tx>(
  scope: VerbScope<Db, Tx>,
  tx: unknown,
  target: LockTarget,
  options: LockOptions | undefined,
  attempt: boolean,
  verb: string,
): Promise<boolean> {
  const { port, db } = scope;
  if ((options as WithLockOptions | undefined)?.transaction !== undefined) {
    throw new InvalidLockOptionsError(
      `${verb}: transaction settings cannot apply here: ${verb}(tx, …) locks inside a transaction that is already open. Set them where you open it, or use withLock, whose transaction option opens one with them.`,
    );
  }
  let request = requestFor(target, options, lockDefaultsOf(scope.defaults), attempt, verb, LOCK_OPTION_KEYS);
  const current = currentContext();
  const context = current && contextOfTransaction(tx, current);
  const running = context?.nested;
  if (running !== undefined) {
    throw new LockUsageError(
      `${verb}: the nested ${running.context.verb} on the ${describe(running.context)} is running on this transaction; a lock taken now would be inside its savepoint, and released if that call rolls back. Await the nested call first, or take this lock inside its callback.`,
      { keys: request.keys },
    );
  }
  if (context === undefined) {
    const settled = settledTransaction(tx, current);
    if (settled !== undefined) throw settledTransactionError(settled, request, verb);
  }
  const connection = context?.connection ?? port.connectionOf(tx);
  if (connection === undefined) {
    throw new LockUsageError(
      `${verb}(tx, …) needs a transaction: outside one, a transaction-scoped lock is released as soon as its statement ends. ` +
        `Call it with the transaction your callback got, or use withLock to open one.`,
      { keys: request.keys },
    );
  }
  if (request.timeoutMs === undefined && port.defaultTimeoutMs !== undefined) {
    const fallback = port.defaultTimeoutMs('lock', NO_TRANSACTION_SETTINGS, db);
    if (fallback !== undefined) request = { ...request, timeoutMs: fallback };
  }
  assertCancellable(port, db, request, verb);
  if (request.signal?.aborted) throw abortedError(request, verb, request.signal.reason);
  const deadline =
    request.timeoutMs === undefined || request.timeoutMs === 0
      ? undefined
      : performance.now() + request.timeoutMs;
  // Most calls have no signal: no canceller, and no await for one.
  const cancel = request.signal === undefined ? undefined : await cancellerFor(port, db, connection, request);
  let held: boolean;
  try {
    held = await acquire({
      connection,
      request,
      scope: 'transaction',
      deadline,
      ownsTransaction: false,
      cancel,
      verb,
      trace: startTrace(request, 'transaction'),
    });
  } catch (error) {
    throw await truthfulAbort(port, db, request, verb, error, cancel?.pid);
  }
  if (!held && !attempt) throw notAcquiredError(request, verb);
  return held;
}

/**
 * A cancel by pid is not atomic with the grant: the lock can be granted just before the interrupt
 * lands, and the statement then fails although the caller's transaction holds the lock. The
 * transaction cannot be asked (it is failed), so ask from another connection, by pid.
 */
async function truthfulAbort<Db, Tx>(
  port: LockPort<Db, Tx>,
  db: Db,
  request: LockRequest,
  verb: string,
  error: unknown,
  pid: number | undefined,
): Promise<unknown> {
  if (!LockAbortedError.is(error) || error.held || pid === undefined) return error;
  const rows = await port.query(db, heldStatement(request, pid, undefined)).catch(() => []);
  const held = Number(cell(rows[0] ?? {}, 'held')) > 0;
  return held ? abortedError(request, verb, error.reason, error.cause, true) : error;
}
