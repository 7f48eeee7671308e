import { acquire } from './acquire.ts';
import { cancellerFor } from './cancel-wait.ts';
import { startTrace } from './diagnostics.ts';
import { LockUsageError } from './errors.ts';
import type { LockRequest } from './lock-options.ts';
import { notAcquiredError } from './messages.ts';
import { describe, enterContext, type LockContext, runInContext } from './nesting.ts';
import { assertNotFailed, rolledBackError, transactionOpen } from './own-transaction.ts';
import { watchSavepoint } from './savepoint-watch.ts';
import { SqlState, sqlStateOf } from './sql-state.ts';
import type { Statement } from './statement.ts';
import type { TryResult, VerbScope } from './transaction-lock.ts';
import { savepointStatements } from './transaction-statements.ts';

// A lock call inside a running transaction (a callback's, or one the caller opened): the lock is
// taken inside a savepoint, so a nested call that fails rolls back only its own work.

/** One lock call nested in a running transaction: what it locks, its callback, and how it was called. */
export interface NestedCall<T> {
  readonly request: LockRequest;
  readonly fn: (tx: unknown) => Promise<T>;
  /** A try: a lock found taken rolls back to the savepoint and resolves `{ acquired: false }`. */
  readonly attempt: boolean;
  readonly verb: string;
}

/** Runs `call` inside `outer`'s transaction, in a savepoint of its own, one nested call at a time. */
export function nested<Db, Tx, T>(
  scope: VerbScope<Db, Tx>,
  outer: LockContext,
  call: NestedCall<T>,
): Promise<T | TryResult<T>> {
  const { request, verb } = call;
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
  const started = enterContext(context, () => inSavepoint(scope, outer, context, call, end), undefined);
  awaiting.add(started);
  return started;
}

/** The body of a nested call: savepoint, lock, callback, release (or roll back to the savepoint). */
async function inSavepoint<Db, Tx, T>(
  scope: VerbScope<Db, Tx>,
  outer: LockContext,
  context: LockContext,
  call: NestedCall<T>,
  end: () => void,
): Promise<T | TryResult<T>> {
  const { request, fn, attempt, verb } = call;
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
