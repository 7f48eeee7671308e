import { acquire, budgetLeft } from './acquire.ts';
import { cancellerFor } from './cancel-wait.ts';
import { startTrace } from './diagnostics.ts';
import { LockAbortedError, TransactionRolledBackError } from './errors.ts';
import type { LockRequest } from './lock-options.ts';
import type { LockPort, PortConnection, TransactionRequest } from './lock-port.ts';
import { abortedError, describeKeys, notAcquiredError } from './messages.ts';
import { type LockContext, rememberTransaction, runInContext } from './nesting.ts';
import { SqlState, saysConnectionEnded, sqlStateOf } from './sql-state.ts';
import { requestBound } from './start-bound.ts';
import type { TryResult, VerbScope } from './transaction-lock.ts';
import { type CheckedTransactionSettings, NO_TRANSACTION_SETTINGS } from './transaction-settings.ts';
import { failedCheck } from './transaction-statements.ts';
import { enterQueue } from './wait-queue.ts';

// withLock in a transaction of its own: open it through the port, take the lock as its first
// statement, run the callback, and tell a rolled-back commit from a kept one.

// Private: thrown from the transaction body so the ORM rolls back a try that found the lock taken.
class NotTaken {
  constructor(readonly error: Error) {}
}

/** The request of most transactions (no settings, no bound), made once. */
const PLAIN_TRANSACTION: TransactionRequest = Object.freeze({
  settings: NO_TRANSACTION_SETTINGS,
  waitMs: undefined,
});

/** One `withLock` / `tryWithLock` call that opens a transaction of its own. */
export interface OwnTransactionCall<Tx, T> {
  readonly request: LockRequest;
  readonly settings: CheckedTransactionSettings;
  readonly fn: (tx: Tx) => Promise<T>;
  /** A try: a lock found taken rolls back and resolves `{ acquired: false }`. */
  readonly attempt: boolean;
  readonly verb: string;
  /** The context the call was made in (a callback on another database), the new one's parent. */
  readonly parent: LockContext | undefined;
}

/**
 * Runs `call.fn` in a transaction the port opens, whose first statement takes the lock (after the
 * call's place in the in-process queue, within its budget), and commits unless the callback threw.
 */
export async function ownTransaction<Db, Tx, T>(
  scope: VerbScope<Db, Tx>,
  call: OwnTransactionCall<Tx, T>,
): Promise<T | TryResult<T>> {
  const { port, db } = scope;
  const { request, settings, fn, attempt, verb, parent } = call;
  const deadline =
    request.timeoutMs === undefined || request.timeoutMs === 0
      ? undefined
      : performance.now() + request.timeoutMs;
  let leaveQueue: (() => void) | undefined;
  if (request.timeoutMs !== 0) {
    const entered = enterQueue(db as object, request.keys, request.shared, deadline, request.signal);
    const turn = typeof entered === 'function' ? entered : await entered;
    if (turn === 'timeout') {
      endedEarly(request, 'timeout');
      if (attempt) return { acquired: false };
      throw notAcquiredError(request, verb);
    }
    if (turn === 'aborted') {
      const error = abortedError(request, verb, request.signal?.reason);
      endedEarly(request, 'aborted', error);
      throw error;
    }
    leaveQueue = turn;
  }
  const trace = startTrace(request, 'transaction');
  let acquired = false;
  // Set once the lock statement is sent: acquire() reports the call from then on.
  let asked = false;
  // The pool's wait and the ORM's BEGIN come out of the same budget, and the signal ends them too.
  // Most calls have neither a deadline nor a signal: no bound, and no closures built for one.
  const bound = requestBound(request, verb, deadline, () => new NotTaken(notAcquiredError(request, verb)));
  // What the callback threw, if it did.
  let thrown: { readonly error: unknown } | undefined;
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
          asked = true;
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
        let result: T;
        try {
          result = await runInContext(context, fn, tx);
        } catch (error) {
          thrown = { error };
          throw error;
        }
        if (!transactionOpen(connection)) await assertNotFailed(port, connection, request, verb, false);
        return result;
      },
    );
    const value = bound === undefined ? await running : await bound.wait(running);
    return attempt ? { acquired: true, value } : value;
  } catch (error) {
    if (error instanceof NotTaken) {
      if (!asked) endedEarly(request, 'timeout');
      if (attempt) return { acquired: false };
      throw error.error;
    }
    if (!asked && LockAbortedError.is(error)) endedEarly(request, 'aborted', error);
    // The callback threw, then the ORM's ROLLBACK failed on a connection that had ended, and the ORM
    // rejects with that (Drizzle and Kysely over node-postgres): the server rolled back as the
    // connection ended, and the callback's error is the one that says what happened.
    if (thrown !== undefined && error !== thrown.error && saysConnectionEnded(error)) throw thrown.error;
    throw error;
  } finally {
    leaveQueue?.();
    if (acquired) trace.released();
  }
}

/** The driver says, without a round trip, that the transaction is fine (the common case). */
export function transactionOpen(connection: PortConnection): boolean {
  const status = connection.transactionStatus?.();
  return status === 'transaction' || status === 'idle';
}

/**
 * The transaction has failed in PostgreSQL (a statement in it failed and the callback caught the
 * error): its COMMIT would be a ROLLBACK. Say so rather than resolve as if the work was written.
 */
export async function assertNotFailed<Db, Tx>(
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

export function rolledBackError(
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

/**
 * Reports a call whose budget ran out, or whose signal fired, before its lock statement was sent (in
 * the in-process queue, or waiting for a pooled connection and BEGIN): subscribers hear of every
 * call that ended without the lock, not only of those the server answered.
 */
function endedEarly(request: LockRequest, reason: 'timeout' | 'aborted', error?: unknown): void {
  const trace = startTrace(request, 'transaction');
  trace.requested();
  trace.notAcquired(reason, error);
}
