import {
  type AdvisoryLockInfo,
  type LockKeyInput,
  type LockOptions,
  type LockTarget,
  type TryResult,
  withDefaults,
} from '@pglock/core';
import type { DrizzleDatabaseLike, DrizzleTransactionLike, TxOf } from './drizzle-types.ts';
import {
  type DrizzleLockOptions,
  inspectLocks,
  isLocked,
  lockedTransaction,
  lockInTx,
  tryLockInTx,
} from './with-lock.ts';

/** The adapter's functions bound to one Drizzle database and default options. */
export interface DrizzleAdvisoryLocks<Tx> {
  /** `db.transaction` with the lock as its first statement; resolves the callback's value. */
  withLock<T>(target: LockTarget, fn: (tx: Tx) => Promise<T>, options?: DrizzleLockOptions): Promise<T>;
  /** Like `withLock`, resolving `{ acquired: false }` when taken (one try unless `timeoutMs` is set). */
  tryWithLock<T>(
    target: LockTarget,
    fn: (tx: Tx) => Promise<T>,
    options?: DrizzleLockOptions,
  ): Promise<TryResult<T>>;
  /** Locks inside the caller's own `db.transaction`; a `signal` is cancelled through the bound database. */
  lock(tx: DrizzleTransactionLike, target: LockTarget, options?: LockOptions): Promise<void>;
  /** Tries inside the caller's own `db.transaction` (one try unless `timeoutMs` is set). */
  tryLock(tx: DrizzleTransactionLike, target: LockTarget, options?: LockOptions): Promise<boolean>;
  isLocked(key: LockKeyInput): Promise<boolean>;
  inspectLocks(): Promise<AdvisoryLockInfo[]>;
}

/**
 * Binds the adapter to a Drizzle PostgreSQL database (node-postgres Pool or Client, postgres.js,
 * PGlite) and default options. Per-call options override the defaults; `tryWithLock` and `tryLock`
 * try once unless the call itself sets `timeoutMs`. `tx` in the callbacks is `db`'s own transaction
 * type, schema included.
 *
 * @example
 * ```ts
 * import { drizzle } from 'drizzle-orm/node-postgres';
 * import { advisoryLocks } from '@pglock/drizzle';
 *
 * const db = drizzle(process.env.DATABASE_URL!, { schema });
 * const locks = advisoryLocks(db, { namespace: 'billing', timeoutMs: 5_000 });
 * await locks.withLock(`account:${id}`, async (tx) => {
 *   const account = await tx.query.accounts.findFirst({ where: eq(accounts.id, id) });
 * });
 * ```
 */
export function advisoryLocks<DB extends DrizzleDatabaseLike>(
  db: DB,
  defaults: DrizzleLockOptions = {},
): DrizzleAdvisoryLocks<TxOf<DB>> {
  const { timeoutMs: _wait, ...tryDefaults } = defaults;
  const { transaction: _config, ...lockDefaults } = defaults;
  const { transaction: _tryConfig, ...tryLockDefaults } = tryDefaults;
  return {
    withLock: <T>(target: LockTarget, fn: (tx: TxOf<DB>) => Promise<T>, options?: DrizzleLockOptions) =>
      lockedTransaction(db, target, fn, withDefaults(defaults, options), false) as Promise<T>,
    tryWithLock: <T>(target: LockTarget, fn: (tx: TxOf<DB>) => Promise<T>, options?: DrizzleLockOptions) =>
      lockedTransaction(db, target, fn, withDefaults(tryDefaults, options), true) as Promise<TryResult<T>>,
    lock: (tx, target, options) => lockInTx(tx, target, withDefaults(lockDefaults, options), db),
    tryLock: (tx, target, options) => tryLockInTx(tx, target, withDefaults(tryLockDefaults, options), db),
    isLocked: (key) => isLocked(db, key, { namespace: defaults.namespace }),
    inspectLocks: () => inspectLocks(db),
  };
}
