import { InvalidLockOptionsError, type LockRequest } from '@pglock/core';
import type { PrismaIsolationLevel, PrismaTransactionOptions } from './prisma-types.ts';

/**
 * Prisma's default interactive-transaction `timeout`: what a `$withLock` callback gets once the lock
 * is held, and how long an omitted `timeoutMs` waits, unless `transaction.timeout` says otherwise.
 *
 * @example
 * ```ts
 * import { PRISMA_DEFAULT_TIMEOUT_MS } from '@pglock/prisma';
 *
 * await prisma.$withLock('import', run, { transaction: { timeout: 2 * PRISMA_DEFAULT_TIMEOUT_MS } });
 * ```
 */
export const PRISMA_DEFAULT_TIMEOUT_MS = 5_000;

// Prisma arms its transaction timer with setTimeout, which fires at once (after a warning) for
// anything above a signed 32-bit millisecond count: the transaction would expire immediately.
const MAX_TIMER_MS = 2 ** 31 - 1;

const ISOLATION_LEVELS: readonly PrismaIsolationLevel[] = [
  'ReadUncommitted',
  'ReadCommitted',
  'RepeatableRead',
  'Serializable',
];

/** Validated transaction options: `timeout` is the callback's share, after the lock is held. */
export interface CheckedTransaction {
  readonly maxWait: number | undefined;
  readonly callbackMs: number;
  readonly isolationLevel: PrismaIsolationLevel | undefined;
}

/** Checks `transaction` before any SQL; bad values become `InvalidLockOptionsError`. */
export function checkTransaction(transaction: PrismaTransactionOptions = {}): CheckedTransaction {
  const { maxWait, timeout = PRISMA_DEFAULT_TIMEOUT_MS, isolationLevel } = transaction;
  for (const [name, value] of [
    ['maxWait', maxWait],
    ['timeout', timeout],
  ] as const) {
    if (value !== undefined && (!Number.isInteger(value) || value < 1 || value > MAX_TIMER_MS)) {
      throw new InvalidLockOptionsError(
        `transaction.${name} must be an integer from 1 to ${MAX_TIMER_MS} ms (got ${String(value)}).`,
      );
    }
  }
  if (isolationLevel !== undefined && !ISOLATION_LEVELS.includes(isolationLevel)) {
    throw new InvalidLockOptionsError(
      `transaction.isolationLevel must be one of ${ISOLATION_LEVELS.join(', ')} (got ${String(isolationLevel)}).`,
    );
  }
  return { maxWait, callbackMs: timeout, isolationLevel };
}

/**
 * The options for Prisma's `$transaction`: its `timeout` is the lock wait plus the callback's share,
 * so a wait that ends at `timeoutMs` (PostgreSQL's `lock_timeout`, on the server) always leaves the
 * callback its whole `transaction.timeout`. Prisma does not cancel a query when the transaction
 * expires, so without this a lock granted late would run the callback in an expired transaction
 * and fail at its next query or at COMMIT with P2028 (prisma/prisma#17245, #9533).
 */
export function prismaTransactionOptions(
  request: LockRequest,
  checked: CheckedTransaction,
): { maxWait?: number; timeout: number; isolationLevel?: PrismaIsolationLevel } {
  const waitMs = request.timeoutMs ?? 0;
  const timeout = waitMs + checked.callbackMs;
  if (timeout > MAX_TIMER_MS) {
    throw new InvalidLockOptionsError(
      `timeoutMs (${waitMs}) plus transaction.timeout (${checked.callbackMs}) is ${timeout} ms, above the ${MAX_TIMER_MS} ms a Prisma transaction can last; lower timeoutMs.`,
    );
  }
  return {
    timeout,
    ...(checked.maxWait === undefined ? {} : { maxWait: checked.maxWait }),
    ...(checked.isolationLevel === undefined ? {} : { isolationLevel: checked.isolationLevel }),
  };
}
