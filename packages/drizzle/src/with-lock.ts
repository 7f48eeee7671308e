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
  type TryResult,
  tryLockInTransaction,
} from '@pglock/core';
import { is } from 'drizzle-orm';
import { PgTransaction } from 'drizzle-orm/pg-core';
import { assertCancellable, cancelRoot, drizzleExecutor } from './drizzle-executor.ts';
import type {
  DrizzleDatabaseLike,
  DrizzleExecutes,
  DrizzleTransactionConfig,
  DrizzleTransactionLike,
  TxOf,
} from './drizzle-types.ts';
import { checkTransactionConfig, drizzleTransactionDriver } from './transaction-driver.ts';

/** Options of `withLock`/`tryWithLock`: core's, plus Drizzle's own transaction config, passed through. */
export interface DrizzleLockOptions extends LockOptions {
  /** `db.transaction`'s config: `isolationLevel`, `accessMode`, `deferrable`. */
  readonly transaction?: DrizzleTransactionConfig | undefined;
}

/**
 * Runs `fn` in `db.transaction(async (tx) => …)` whose first statement takes the transaction-scoped
 * lock; COMMIT (or ROLLBACK when `fn` throws) releases it. Resolves `fn`'s value. Throws
 * `LockNotAcquiredError` when not acquired within `timeoutMs`. Given a transaction, it opens a
 * savepoint there and the lock lasts until that outer transaction ends.
 *
 * @example
 * ```ts
 * import { withLock } from '@pglock/drizzle';
 *
 * await withLock(db, ['account:1', 'account:2'], async (tx) => {
 *   await tx.update(accounts).set({ balance: sql`balance - 10` }).where(eq(accounts.id, 1));
 *   await tx.update(accounts).set({ balance: sql`balance + 10` }).where(eq(accounts.id, 2));
 * }, { timeoutMs: 5_000, transaction: { isolationLevel: 'read committed' } });
 * ```
 */
export function withLock<DB extends DrizzleDatabaseLike, T>(
  db: DB,
  target: LockTarget,
  fn: (tx: TxOf<DB>) => Promise<T>,
  options: DrizzleLockOptions = {},
): Promise<T> {
  return lockedTransaction(db, target, fn, options, false) as Promise<T>;
}

/**
 * Like {@link withLock}, but resolves `{ acquired: false }` (the transaction rolled back, `fn` not
 * run) instead of throwing when the lock is taken. `timeoutMs` defaults to 0 (one try).
 *
 * @example
 * ```ts
 * import { tryWithLock } from '@pglock/drizzle';
 *
 * const run = await tryWithLock(db, 'job:nightly-report', async (tx) => buildReport(tx));
 * if (!run.acquired) console.log('another worker has it');
 * ```
 */
export function tryWithLock<DB extends DrizzleDatabaseLike, T>(
  db: DB,
  target: LockTarget,
  fn: (tx: TxOf<DB>) => Promise<T>,
  options: DrizzleLockOptions = {},
): Promise<TryResult<T>> {
  return lockedTransaction(db, target, fn, options, true) as Promise<TryResult<T>>;
}

/** Shared by the plain functions and `advisoryLocks`; `root` is where a cancel is sent from. */
export async function lockedTransaction<DB extends DrizzleDatabaseLike, T>(
  db: DB,
  target: LockTarget,
  fn: (tx: TxOf<DB>) => Promise<T>,
  options: DrizzleLockOptions,
  attempt: boolean,
  root: unknown = db,
): Promise<T | TryResult<T>> {
  const request = lockRequest(target, options, attempt ? { timeoutMs: 0 } : {});
  const config = checkTransactionConfig(db, options.transaction);
  const cancelVia = cancelRoot(root);
  assertCancellable(request, cancelVia);
  const driver = drizzleTransactionDriver(db, config, cancelVia);
  return attempt ? runTryWithLock(driver, request, fn) : runWithLock(driver, request, fn);
}

/**
 * Takes a transaction-scoped lock inside the caller's own `db.transaction`; held until it ends.
 * Throws `LockNotAcquiredError` when not acquired within `timeoutMs` (the transaction is then
 * failed: let the error leave the callback so Drizzle rolls back). Only a `tx` type-checks: a
 * top-level database would run the lock in autocommit, where it ends at once. `signal` needs the
 * root database to cancel from: use `advisoryLocks(db).lock`.
 *
 * @example
 * ```ts
 * import { lock } from '@pglock/drizzle';
 *
 * await db.transaction(async (tx) => {
 *   await lock(tx, `account:${id}`, { timeoutMs: 2_000 });
 *   await tx.update(accounts).set({ frozen: true }).where(eq(accounts.id, id));
 * });
 * ```
 */
export function lock(
  tx: DrizzleTransactionLike,
  target: LockTarget,
  options: LockOptions = {},
): Promise<void> {
  return lockInTx(tx, target, options, undefined);
}

/**
 * Tries a transaction-scoped lock inside the caller's `db.transaction`: `true` when held (until the
 * transaction ends), `false` when taken elsewhere. `timeoutMs` defaults to 0; then the transaction
 * stays usable either way.
 *
 * @example
 * ```ts
 * import { tryLock } from '@pglock/drizzle';
 *
 * await db.transaction(async (tx) => {
 *   if (!(await tryLock(tx, 'job:cleanup'))) return;
 *   await tx.delete(sessions).where(lt(sessions.expiresAt, new Date()));
 * });
 * ```
 */
export function tryLock(
  tx: DrizzleTransactionLike,
  target: LockTarget,
  options: LockOptions = {},
): Promise<boolean> {
  return tryLockInTx(tx, target, options, undefined);
}

export async function lockInTx(
  tx: DrizzleTransactionLike,
  target: LockTarget,
  options: LockOptions,
  root: unknown,
): Promise<void> {
  const request = lockRequest(target, options);
  const cancelVia = cancelRoot(root);
  assertTransaction(tx);
  assertCancellable(request, cancelVia);
  await lockInTransaction(drizzleExecutor(tx, cancelVia), request);
}

export async function tryLockInTx(
  tx: DrizzleTransactionLike,
  target: LockTarget,
  options: LockOptions,
  root: unknown,
): Promise<boolean> {
  const request = lockRequest(target, options, { timeoutMs: 0 });
  const cancelVia = cancelRoot(root);
  assertTransaction(tx);
  assertCancellable(request, cancelVia);
  return tryLockInTransaction(drizzleExecutor(tx, cancelVia), request);
}

// The types already refuse a database; this catches JavaScript callers and casts, before any SQL.
function assertTransaction(tx: unknown): void {
  if (is(tx, PgTransaction)) return;
  throw new AdvisoryLockError(
    'LOCK_USAGE',
    'lock()/tryLock() take the tx of db.transaction(async (tx) => …). A top-level Drizzle database runs each ' +
      'statement in autocommit (on a pool, on any connection), so a transaction lock would end at once. Use withLock(db, …).',
  );
}

/**
 * True when any session holds `key`. A snapshot, for dashboards and tests, not for deciding whether
 * to take a lock (use {@link tryWithLock} for that). Takes a database or a transaction.
 *
 * @example
 * ```ts
 * import { isLocked } from '@pglock/drizzle';
 *
 * console.log(await isLocked(db, 'job:nightly-report'));
 * ```
 */
export async function isLocked(
  db: DrizzleExecutes,
  key: LockKeyInput,
  options: Pick<LockOptions, 'namespace'> = {},
): Promise<boolean> {
  const resolved = lockKey(key, options);
  return coreIsLocked(drizzleExecutor(db), resolved);
}

/**
 * Every advisory lock in the current database with its holders and waiters (`pg_locks` joined with
 * `pg_stat_activity`). Takes a database or a transaction.
 *
 * @example
 * ```ts
 * import { inspectLocks } from '@pglock/drizzle';
 *
 * console.table(await inspectLocks(db));
 * ```
 */
export function inspectLocks(db: DrizzleExecutes): Promise<AdvisoryLockInfo[]> {
  return coreInspectLocks(drizzleExecutor(db));
}
