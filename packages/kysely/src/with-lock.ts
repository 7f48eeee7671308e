import {
  AdvisoryLockError,
  type AdvisoryLockInfo,
  inspectLocks as coreInspectLocks,
  isLocked as coreIsLocked,
  type LockKeyInput,
  type LockOptions,
  type LockRequest,
  type LockTarget,
  lockInTransaction,
  lockKey,
  lockRequest,
  runTryWithLock,
  runWithLock,
  type TryResult,
  tryLockInTransaction,
} from '@pglock/core';
import type { Kysely, Transaction } from 'kysely';
import { kyselyExecutor } from './kysely-executor.ts';
import type { KyselyExecutorLike, KyselyTransactionLike } from './kysely-types.ts';
import {
  assertNotTransaction,
  checkSettings,
  kyselyTransactionDriver,
  type TransactionSettings,
} from './transaction-driver.ts';

/** Options of `withLock` / `tryWithLock`: core's, plus how Kysely opens the transaction. */
export interface KyselyLockOptions extends LockOptions, TransactionSettings {}

/**
 * Runs `fn` in `db.transaction()` whose first statement takes the transaction-scoped lock; the
 * commit (or the rollback when `fn` throws) releases it. `isolationLevel` and `accessMode` go to
 * Kysely's transaction builder. Throws `LockNotAcquiredError` when not acquired within `timeoutMs`.
 *
 * @example
 * ```ts
 * import { withLock } from '@pglock/kysely';
 *
 * await withLock(db, `product:${id}`, async (trx) => {
 *   await trx.updateTable('product').set((eb) => ({ stock: eb('stock', '-', 1) })).where('id', '=', id).execute();
 * });
 * ```
 */
export async function withLock<DB, T>(
  db: Kysely<DB>,
  target: LockTarget,
  fn: (trx: Transaction<DB>) => Promise<T>,
  options: KyselyLockOptions = {},
): Promise<T> {
  const request = lockRequest(target, options);
  checkSettings(options);
  assertNotTransaction(db, 'withLock');
  return runWithLock(kyselyTransactionDriver(db, options), request, fn);
}

/**
 * Like {@link withLock}, but resolves `{ acquired: false }` instead of throwing when the lock is
 * taken (the transaction is rolled back). `timeoutMs` defaults to 0 (one try).
 *
 * @example
 * ```ts
 * import { tryWithLock } from '@pglock/kysely';
 *
 * const result = await tryWithLock(db, 'nightly-report', (trx) => buildReport(trx));
 * if (!result.acquired) console.log('another instance builds it');
 * ```
 */
export async function tryWithLock<DB, T>(
  db: Kysely<DB>,
  target: LockTarget,
  fn: (trx: Transaction<DB>) => Promise<T>,
  options: KyselyLockOptions = {},
): Promise<TryResult<T>> {
  const request = lockRequest(target, options, { timeoutMs: 0 });
  checkSettings(options);
  assertNotTransaction(db, 'tryWithLock');
  return runTryWithLock(kyselyTransactionDriver(db, options), request, fn);
}

/**
 * Takes a transaction-scoped lock inside a Kysely transaction the caller opened; it is held until
 * that transaction ends. Only a transaction is accepted (a plain `Kysely` does not compile). Throws
 * `LockNotAcquiredError` when not acquired within `timeoutMs` (the transaction is then failed).
 * `signal` needs a second connection to cancel the wait from: use `advisoryLocks(db).lock` for it.
 *
 * @example
 * ```ts
 * import { lock } from '@pglock/kysely';
 *
 * await db.transaction().execute(async (trx) => {
 *   await lock(trx, ['account:1', 'account:2']);
 *   // … transfer …
 * });
 * ```
 */
export async function lock(
  trx: KyselyTransactionLike,
  target: LockTarget,
  options: LockOptions = {},
): Promise<void> {
  await lockIn(trx, lockRequest(target, options));
}

/**
 * Tries a transaction-scoped lock inside the caller's Kysely transaction: `true` when held (until
 * the transaction ends), `false` when taken elsewhere. `timeoutMs` defaults to 0.
 *
 * @example
 * ```ts
 * import { tryLock } from '@pglock/kysely';
 *
 * await db.transaction().execute(async (trx) => {
 *   if (await tryLock(trx, 'report')) await buildReport(trx);
 * });
 * ```
 */
export async function tryLock(
  trx: KyselyTransactionLike,
  target: LockTarget,
  options: LockOptions = {},
): Promise<boolean> {
  return tryLockIn(trx, lockRequest(target, options, { timeoutMs: 0 }));
}

/** {@link lock} with a root instance to cancel from (the factory's `db`). */
export async function lockIn(
  trx: KyselyTransactionLike,
  request: LockRequest,
  root?: KyselyExecutorLike,
): Promise<void> {
  assertTransaction(trx, 'lock');
  await lockInTransaction(kyselyExecutor(trx, root), request);
}

/** {@link tryLock} with a root instance to cancel from (the factory's `db`). */
export async function tryLockIn(
  trx: KyselyTransactionLike,
  request: LockRequest,
  root?: KyselyExecutorLike,
): Promise<boolean> {
  assertTransaction(trx, 'tryLock');
  return tryLockInTransaction(kyselyExecutor(trx, root), request);
}

// For JavaScript callers and casts: the type already rejects a plain Kysely instance.
function assertTransaction(trx: KyselyTransactionLike, what: string): void {
  if (trx?.isTransaction !== true) {
    throw new AdvisoryLockError(
      'LOCK_USAGE',
      `${what}(trx, …) needs a Kysely transaction: outside one, a transaction-scoped lock is released as soon as its statement ends. Use withLock(db, …), or call it inside db.transaction().execute(…).`,
    );
  }
}

/**
 * True when any session holds `key`. A snapshot, for dashboards and tests, not for deciding
 * whether to take a lock (use {@link tryWithLock} for that).
 *
 * @example
 * ```ts
 * import { isLocked } from '@pglock/kysely';
 *
 * console.log(await isLocked(db, 'nightly-report'));
 * ```
 */
export async function isLocked(
  db: KyselyExecutorLike,
  key: LockKeyInput,
  options: Pick<LockOptions, 'namespace'> = {},
): Promise<boolean> {
  return coreIsLocked(kyselyExecutor(db), lockKey(key, options));
}

/**
 * Every advisory lock in the current database, holders and waiters (`pg_locks` joined with
 * `pg_stat_activity`).
 *
 * @example
 * ```ts
 * import { inspectLocks } from '@pglock/kysely';
 *
 * console.table(await inspectLocks(db));
 * ```
 */
export async function inspectLocks(db: KyselyExecutorLike): Promise<AdvisoryLockInfo[]> {
  return coreInspectLocks(kyselyExecutor(db));
}
