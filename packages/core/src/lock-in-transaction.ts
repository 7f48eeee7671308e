import { acquire } from './acquire.ts';
import { heldStatement } from './backend-statements.ts';
import { assertCancellable, cancellerFor } from './cancel-wait.ts';
import { startTrace } from './diagnostics.ts';
import { InvalidLockOptionsError, LockAbortedError, LockUsageError } from './errors.ts';
import type { LockOptions, LockRequest, LockTarget } from './lock-options.ts';
import type { LockPort } from './lock-port.ts';
import { abortedError, notAcquiredError } from './messages.ts';
import { contextOfTransaction, currentContext, describe, settledTransaction } from './nesting.ts';
import { LOCK_OPTION_KEYS } from './option-keys.ts';
import { cell } from './row-cell.ts';
import {
  requestFor,
  settledTransactionError,
  type VerbScope,
  type WithLockOptions,
} from './transaction-lock.ts';
import { NO_TRANSACTION_SETTINGS } from './transaction-settings.ts';

// `lock(tx)` / `tryLock(tx)`: a lock held until the end of a transaction the caller runs.

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
