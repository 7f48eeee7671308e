import { abortedError, acquireLocks, describeKeys } from './acquire-locks.ts';
import { LockTrace } from './diagnostics.ts';
import { LockNotAcquiredError } from './errors.ts';
import type { LockExecutor } from './lock-executor.ts';
import type { LockRequest } from './lock-options.ts';

/**
 * How an adapter opens a transaction on one pinned connection: `transaction(body)` commits when
 * `body` resolves and rolls back when it throws (every ORM's own transaction API does exactly
 * this), and `executor(tx)` runs statements on that transaction's connection.
 */
export interface TransactionDriver<Tx> {
  transaction<R>(body: (tx: Tx) => Promise<R>): Promise<R>;
  executor(tx: Tx): LockExecutor;
}

/** Result of a try: the callback's value when the lock was taken. */
export type TryResult<T> = { readonly acquired: true; readonly value: T } | { readonly acquired: false };

/**
 * Runs `fn` in a new transaction whose first statement takes the transaction-scoped lock(s) of
 * `request`; COMMIT or ROLLBACK releases them. Throws {@link LockNotAcquiredError} when not taken.
 * Errors from `fn` reach the caller unchanged.
 *
 * @example
 * ```ts
 * import { lockRequest, runWithLock } from '@pglock/core';
 *
 * const total = await runWithLock(driver, lockRequest('ledger', { timeoutMs: 1_000 }), async (tx) => sum(tx));
 * ```
 */
export async function runWithLock<Tx, T>(
  driver: TransactionDriver<Tx>,
  request: LockRequest,
  fn: (tx: Tx) => Promise<T>,
): Promise<T> {
  assertNotAborted(request);
  const trace = new LockTrace(request, 'transaction');
  try {
    return await driver.transaction(async (tx) => {
      const held = await acquireLocks(driver.executor(tx), request, {
        scope: 'transaction',
        ownsTransaction: true,
        trace,
      });
      if (!held) throw notAcquiredError(request);
      return fn(tx);
    });
  } finally {
    trace.released();
  }
}

/**
 * Like {@link runWithLock}, but a lock that is not taken resolves `{ acquired: false }` (the
 * transaction is rolled back) instead of throwing. A `LockNotAcquiredError` thrown by `fn` itself,
 * from a nested lock, still propagates.
 *
 * @example
 * ```ts
 * import { lockRequest, runTryWithLock } from '@pglock/core';
 *
 * const result = await runTryWithLock(driver, lockRequest('rebuild', { timeoutMs: 0 }), rebuild);
 * if (!result.acquired) console.log('another instance is rebuilding');
 * ```
 */
export async function runTryWithLock<Tx, T>(
  driver: TransactionDriver<Tx>,
  request: LockRequest,
  fn: (tx: Tx) => Promise<T>,
): Promise<TryResult<T>> {
  assertNotAborted(request);
  let ours: LockNotAcquiredError | undefined;
  const trace = new LockTrace(request, 'transaction');
  try {
    const value = await driver.transaction(async (tx) => {
      const held = await acquireLocks(driver.executor(tx), request, {
        scope: 'transaction',
        ownsTransaction: true,
        trace,
      });
      if (!held) {
        // Thrown (not returned) so that the ORM rolls the transaction back, releasing a partial multi-key try.
        ours = notAcquiredError(request);
        throw ours;
      }
      return fn(tx);
    });
    return { acquired: true, value };
  } catch (error) {
    if (ours !== undefined && error === ours) return { acquired: false };
    throw error;
  } finally {
    trace.released();
  }
}

/**
 * Takes transaction-scoped lock(s) inside a transaction the caller already opened. Throws
 * {@link LockNotAcquiredError} when not taken; after a bounded wait elapses the transaction is in
 * the failed state and must be rolled back (PostgreSQL aborts it with the 55P03 error).
 *
 * @example
 * ```ts
 * import { lockInTransaction, lockRequest } from '@pglock/core';
 *
 * await lockInTransaction(executor, lockRequest(['account:1', 'account:2']));
 * ```
 */
export async function lockInTransaction(executor: LockExecutor, request: LockRequest): Promise<void> {
  const held = await acquireLocks(executor, request, { scope: 'transaction' });
  if (!held) throw notAcquiredError(request);
}

/**
 * Tries transaction-scoped lock(s) inside the caller's transaction: `true` when all are held,
 * `false` (and none held) otherwise. With `timeoutMs: 0` (a single try) the transaction stays
 * usable either way; a bounded wait that elapses leaves it failed (PostgreSQL's 55P03), as with
 * {@link lockInTransaction}.
 *
 * @example
 * ```ts
 * import { lockRequest, tryLockInTransaction } from '@pglock/core';
 *
 * if (await tryLockInTransaction(executor, lockRequest('report', { timeoutMs: 0 }))) await buildReport();
 * ```
 */
export async function tryLockInTransaction(executor: LockExecutor, request: LockRequest): Promise<boolean> {
  return acquireLocks(executor, request, { scope: 'transaction', ownsTransaction: false });
}

/**
 * The error for a lock that was not taken, with a message that says what to do next.
 *
 * @example
 * ```ts
 * import { lockRequest, notAcquiredError } from '@pglock/core';
 *
 * throw notAcquiredError(lockRequest('job', { timeoutMs: 0 }));
 * ```
 */
export function notAcquiredError(request: LockRequest): LockNotAcquiredError {
  const { timeoutMs } = request;
  const how =
    timeoutMs === 0
      ? 'is held by another session (tried once, timeoutMs: 0)'
      : timeoutMs === undefined
        ? "was not granted before the server's lock_timeout elapsed"
        : `was not granted within ${timeoutMs} ms`;
  return new LockNotAcquiredError(
    `The ${describeKeys(request)} ${how}. Retry later, raise timeoutMs, or use tryWithLock to skip when busy.`,
    { keys: request.keys, timeoutMs },
  );
}

/**
 * Throws `LockAbortedError` when the request's signal has already fired, so that an adapter can
 * check before it opens a transaction or checks out a connection (no SQL for a call that is over).
 *
 * @example
 * ```ts
 * import { assertNotAborted, lockRequest } from '@pglock/core';
 *
 * assertNotAborted(lockRequest('job', { signal: AbortSignal.timeout(1_000) }));
 * ```
 */
export function assertNotAborted(request: LockRequest): void {
  if (request.signal?.aborted) throw abortedError(request, request.signal.reason);
}
