import {
  AdvisoryLockError,
  type AdvisoryLockInfo,
  inspectLocks as coreInspectLocks,
  isLocked as coreIsLocked,
  type LockKeyInput,
  type LockOptions,
  type LockTarget,
  lockInTransaction,
  lockKey,
  lockRequest,
  runTryWithLock,
  runWithLock,
  type TransactionDriver,
  type TryResult,
  tryLockInTransaction,
} from '@pglock/core';
import { prismaExecutor } from './prisma-executor.ts';
import type {
  PrismaClientLike,
  PrismaRawQueryable,
  PrismaTransactionLike,
  PrismaTransactionOptions,
  TxOf,
} from './prisma-types.ts';
import { checkTransaction, prismaTransactionOptions } from './transaction-budget.ts';

/**
 * Options of the Prisma adapter: core's, plus the interactive transaction's options.
 *
 * @example
 * ```ts
 * import type { PrismaLockOptions } from '@pglock/prisma';
 *
 * const options: PrismaLockOptions = { timeoutMs: 10_000, transaction: { timeout: 5_000, isolationLevel: 'Serializable' } };
 * ```
 */
export interface PrismaLockOptions extends LockOptions {
  /**
   * Passed to `$transaction`. `timeout` is the callback's time once the lock is held; Prisma's own
   * timeout is set to the lock wait plus this, so a lock wait never expires the transaction.
   */
  readonly transaction?: PrismaTransactionOptions | undefined;
}

/**
 * How long `lock(tx, …)` and a waiting `tryLock(tx, …)` wait when `timeoutMs` is omitted: half of
 * Prisma's default 5 s transaction, leaving the other half to the work. Inside a transaction you
 * opened, pglock cannot raise its timeout; pass a `timeoutMs` that fits it.
 *
 * @example
 * ```ts
 * import { DEFAULT_IN_TRANSACTION_WAIT_MS, lock } from '@pglock/prisma';
 *
 * await prisma.$transaction(async (tx) => lock(tx, 'job', { timeoutMs: DEFAULT_IN_TRANSACTION_WAIT_MS * 2 }), { timeout: 10_000 });
 * ```
 */
export const DEFAULT_IN_TRANSACTION_WAIT_MS = 2_500;

/**
 * Runs `fn` in `prisma.$transaction(async (tx) => …)` whose first statement takes the
 * transaction-scoped lock; COMMIT (or ROLLBACK when `fn` throws) releases it. Throws
 * `LockNotAcquiredError` when not acquired within `timeoutMs`, which defaults to
 * `transaction.timeout` (Prisma's 5000 ms): a Prisma transaction never waits without limit.
 *
 * @example
 * ```ts
 * import { withLock } from '@pglock/prisma';
 *
 * await withLock(prisma, `account:${id}`, async (tx) => {
 *   await tx.account.update({ where: { id }, data: { balance: { decrement: 10 } } });
 * });
 * ```
 */
export async function withLock<C extends PrismaClientLike, T>(
  prisma: C,
  target: LockTarget,
  fn: (tx: TxOf<C>) => Promise<T>,
  options: PrismaLockOptions = {},
): Promise<T> {
  const checked = checkTransaction(options.transaction);
  const request = lockRequest(target, options, { timeoutMs: checked.callbackMs });
  return runWithLock(driver(prisma, prismaTransactionOptions(request, checked)), request, fn);
}

/**
 * Like {@link withLock}, but resolves `{ acquired: false }` instead of throwing when the lock is
 * taken. `timeoutMs` defaults to 0 (one try).
 *
 * @example
 * ```ts
 * import { tryWithLock } from '@pglock/prisma';
 *
 * const result = await tryWithLock(prisma, 'leaderboard', async (tx) => rebuild(tx));
 * if (!result.acquired) console.log('another instance is rebuilding');
 * ```
 */
export async function tryWithLock<C extends PrismaClientLike, T>(
  prisma: C,
  target: LockTarget,
  fn: (tx: TxOf<C>) => Promise<T>,
  options: PrismaLockOptions = {},
): Promise<TryResult<T>> {
  const checked = checkTransaction(options.transaction);
  const request = lockRequest(target, options, { timeoutMs: 0 });
  return runTryWithLock(driver(prisma, prismaTransactionOptions(request, checked)), request, fn);
}

/**
 * Takes a transaction-scoped lock inside `prisma.$transaction(async (tx) => …)`; it is held until
 * that transaction ends. `timeoutMs` defaults to {@link DEFAULT_IN_TRANSACTION_WAIT_MS}; keep it
 * below your transaction's `timeout`. `signal` is not supported here (no second client to cancel
 * through): use {@link withLock}. Throws `LockNotAcquiredError` when not acquired in time.
 *
 * @example
 * ```ts
 * import { lock } from '@pglock/prisma';
 *
 * await prisma.$transaction(async (tx) => {
 *   await lock(tx, ['account:1', 'account:2'], { timeoutMs: 1_000 });
 *   // … transfer …
 * });
 * ```
 */
export async function lock(
  tx: PrismaTransactionLike,
  target: LockTarget,
  options: LockOptions = {},
): Promise<void> {
  const request = lockRequest(target, options, { timeoutMs: DEFAULT_IN_TRANSACTION_WAIT_MS });
  await lockInTransaction(prismaExecutor(transactionClient(tx, 'lock')), request);
}

/**
 * Tries a transaction-scoped lock inside `prisma.$transaction(async (tx) => …)`: `true` when held
 * (until the transaction ends), `false` when taken elsewhere. `timeoutMs` defaults to 0.
 *
 * @example
 * ```ts
 * import { tryLock } from '@pglock/prisma';
 *
 * await prisma.$transaction(async (tx) => {
 *   if (await tryLock(tx, 'report')) await buildReport(tx);
 * });
 * ```
 */
export async function tryLock(
  tx: PrismaTransactionLike,
  target: LockTarget,
  options: LockOptions = {},
): Promise<boolean> {
  const request = lockRequest(target, options, { timeoutMs: 0 });
  return tryLockInTransaction(prismaExecutor(transactionClient(tx, 'tryLock')), request);
}

/**
 * True when any session holds `key`. A snapshot, for dashboards and tests, not for deciding
 * whether to take a lock (use {@link tryWithLock} for that).
 *
 * @example
 * ```ts
 * import { isLocked } from '@pglock/prisma';
 *
 * console.log(await isLocked(prisma, 'leaderboard'));
 * ```
 */
export async function isLocked(
  prisma: PrismaRawQueryable,
  key: LockKeyInput,
  options: Pick<LockOptions, 'namespace'> = {},
): Promise<boolean> {
  return coreIsLocked(prismaExecutor(prisma), lockKey(key, options));
}

/**
 * Every advisory lock in the current database with holders and waiters (`pg_locks` joined with
 * `pg_stat_activity`).
 *
 * @example
 * ```ts
 * import { inspectLocks } from '@pglock/prisma';
 *
 * console.table(await inspectLocks(prisma));
 * ```
 */
export async function inspectLocks(prisma: PrismaRawQueryable): Promise<AdvisoryLockInfo[]> {
  return coreInspectLocks(prismaExecutor(prisma));
}

function driver<C extends PrismaClientLike>(
  prisma: C,
  options: ReturnType<typeof prismaTransactionOptions>,
): TransactionDriver<TxOf<C>> {
  return {
    transaction: <R>(body: (tx: TxOf<C>) => Promise<R>) =>
      prisma.$transaction((tx) => body(tx as TxOf<C>), options) as Promise<R>,
    executor: (tx) => prismaExecutor(tx as PrismaRawQueryable, prisma),
  };
}

// The types refuse a root client; this catches it from JavaScript or through a cast. On a root
// client each raw query may run on another pooled connection, in autocommit: a transaction-scoped
// lock would be released as soon as it was taken.
function transactionClient(tx: PrismaTransactionLike, name: string): PrismaTransactionLike {
  if (typeof (tx as { $connect?: unknown }).$connect === 'function') {
    throw new AdvisoryLockError(
      'LOCK_USAGE',
      `${name}(tx, …) needs the transaction client of prisma.$transaction(async (tx) => …), not the Prisma client itself: outside a transaction the lock would be released at once. Use withLock(prisma, …) or prisma.$withLock(…) instead.`,
    );
  }
  return tx;
}
