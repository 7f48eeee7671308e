import { LockTrace } from './diagnostics.ts';
import { AdvisoryLockError, InvalidLockOptionsError, LockAbortedError, LockDeadlockError } from './errors.ts';
import type { LockExecutor } from './lock-executor.ts';
import { formatLockKey } from './lock-key.ts';
import type { LockRequest } from './lock-options.ts';
import { type LockScope, lockStatements, sessionUnlockStatements } from './lock-statements.ts';
import { runCancellable } from './run-cancellable.ts';
import { SqlState, sqlStateOf } from './sql-state.ts';
import { statement } from './statement.ts';

/** How the caller runs the statements: which scope, and whether it owns the transaction. */
export interface AcquireContext {
  readonly scope: LockScope;
  /**
   * True when the transaction was opened for this lock and ends if the acquisition fails (withLock):
   * a failed multi-key try then needs no savepoint, the rollback releases what was taken.
   */
  readonly ownsTransaction?: boolean;
  /** The diagnostics trace of this call; one is made when absent. */
  readonly trace?: LockTrace;
}

const savepoint = statement('SAVEPOINT pglock_try');
const rollbackToSavepoint = statement('ROLLBACK TO SAVEPOINT pglock_try');
const releaseSavepoint = statement('RELEASE SAVEPOINT pglock_try');

/**
 * Takes every key of `request` on `executor`'s connection, all or none. Resolves `true` when held,
 * `false` when a try found a key taken or the bounded wait elapsed (nothing of this call is then
 * held, except transaction-scoped locks in a transaction the caller owns and is about to roll
 * back). Rejects with `LockAbortedError`, `LockDeadlockError`, or `AdvisoryLockError`
 * (`LOCK_QUERY_FAILED`, the driver error as `cause`).
 *
 * After a session-scope rejection other than `LockAbortedError`, the connection's state is not
 * known: adapters destroy it rather than return it to a pool.
 *
 * @example
 * ```ts
 * import { acquireLocks, lockRequest } from '@pglock/core';
 *
 * const held = await acquireLocks(executor, lockRequest('job', { timeoutMs: 0 }), { scope: 'transaction' });
 * ```
 */
export async function acquireLocks(
  executor: LockExecutor,
  request: LockRequest,
  context: AcquireContext,
): Promise<boolean> {
  const trace = context.trace ?? new LockTrace(request, context.scope);
  trace.requested();
  let held: boolean;
  try {
    held = await acquire(executor, request, context);
  } catch (error) {
    trace.notAcquired(
      LockAbortedError.is(error) ? 'aborted' : LockDeadlockError.is(error) ? 'deadlock' : 'error',
      error,
    );
    throw error;
  }
  if (held) trace.acquired();
  else trace.notAcquired(request.timeoutMs === 0 ? 'busy' : 'timeout');
  return held;
}

async function acquire(
  executor: LockExecutor,
  request: LockRequest,
  context: AcquireContext,
): Promise<boolean> {
  const { keys, shared, timeoutMs, signal } = request;
  if (signal?.aborted) throw abortedError(request, signal.reason);
  if (signal !== undefined && timeoutMs !== 0 && executor.cancel === undefined) {
    throw new InvalidLockOptionsError(
      'This connection cannot cancel a server-side wait, so `signal` is not supported on it.',
    );
  }
  const statements = lockStatements(keys, context.scope, shared, timeoutMs);
  if (timeoutMs === 0) return attempt(executor, request, context, statements.attempt);

  for (const stmt of statements.wait) {
    const outcome = await runCancellable(executor, stmt, signal);
    if (outcome.ok && !outcome.aborted) continue;
    try {
      await cleanUp(executor, request, context);
    } catch (error) {
      throw queryFailed(request, outcome.ok ? error : outcome.error);
    }
    if (outcome.aborted) throw abortedError(request, signal?.reason, outcome.ok ? undefined : outcome.error);
    if (outcome.ok) continue;
    const state = sqlStateOf(outcome.error);
    if (state === SqlState.lockNotAvailable) return false;
    if (state === SqlState.deadlockDetected) {
      throw new LockDeadlockError(
        `PostgreSQL detected a deadlock while waiting for ${describeKeys(request)}; another session holds a lock this one waits for and waits for one this one holds. Take nested locks in one order, or pass all keys to one call.`,
        { keys, cause: outcome.error },
      );
    }
    throw queryFailed(request, outcome.error);
  }
  return true;
}

async function attempt(
  executor: LockExecutor,
  request: LockRequest,
  context: AcquireContext,
  statements: readonly ReturnType<typeof statement>[],
): Promise<boolean> {
  // Transaction-scoped locks cannot be released one by one, so a partly failed multi-key try inside
  // the caller's transaction is undone with a savepoint; in a transaction of our own the rollback does it.
  const needsSavepoint =
    context.scope === 'transaction' && !context.ownsTransaction && request.keys.length > 1;
  try {
    if (needsSavepoint) await executor.query(savepoint);
    let held = true;
    for (const stmt of statements) {
      const rows = await executor.query(stmt);
      if (rows.some((row) => row.ok !== true)) {
        held = false;
        break;
      }
    }
    if (!held) {
      if (needsSavepoint) await executor.query(rollbackToSavepoint);
      await cleanUp(executor, request, context);
    }
    if (needsSavepoint) await executor.query(releaseSavepoint);
    return held;
  } catch (error) {
    if (AdvisoryLockError.is(error)) throw error;
    throw queryFailed(request, error);
  }
}

async function cleanUp(executor: LockExecutor, request: LockRequest, context: AcquireContext): Promise<void> {
  if (context.scope !== 'session') return;
  for (const stmt of sessionUnlockStatements(request.keys, request.shared)) await executor.query(stmt);
}

/** The error for a wait the caller's signal ended. */
export function abortedError(request: LockRequest, reason: unknown, cause?: unknown): LockAbortedError {
  return new LockAbortedError(
    `Waiting for ${describeKeys(request)} was aborted by the caller's signal; nothing was left locked.`,
    {
      keys: request.keys,
      reason,
      cause: cause ?? reason,
    },
  );
}

function queryFailed(request: LockRequest, cause: unknown): AdvisoryLockError {
  const detail = cause instanceof Error ? `: ${cause.message}` : '';
  return new AdvisoryLockError(
    'LOCK_QUERY_FAILED',
    `Locking ${describeKeys(request)} failed in the database${detail}`,
    {
      keys: request.keys,
      cause,
    },
  );
}

/** "lock \"job\"" or "3 locks (\"a\", \"b\", 42)", for messages. */
export function describeKeys(request: Pick<LockRequest, 'keys'>): string {
  const labels = request.keys.map(formatLockKey);
  return labels.length === 1 ? `lock ${labels[0]}` : `${labels.length} locks (${labels.join(', ')})`;
}
