import {
  type AdvisoryLockInfo,
  type LockKeyInput,
  type LockOptions,
  type LockTarget,
  lockRequest,
  type TryResult,
  withDefaults,
} from '@pglock/core';
import type { Kysely, Transaction } from 'kysely';
import type { KyselyTransactionLike } from './kysely-types.ts';
import {
  inspectLocks,
  isLocked,
  type KyselyLockOptions,
  lockIn,
  tryLockIn,
  tryWithLock,
  withLock,
} from './with-lock.ts';

/** The adapter's functions bound to one `Kysely` instance and default options. */
export interface KyselyAdvisoryLocks<DB> {
  withLock<T>(
    target: LockTarget,
    fn: (trx: Transaction<DB>) => Promise<T>,
    options?: KyselyLockOptions,
  ): Promise<T>;
  tryWithLock<T>(
    target: LockTarget,
    fn: (trx: Transaction<DB>) => Promise<T>,
    options?: KyselyLockOptions,
  ): Promise<TryResult<T>>;
  lock(trx: KyselyTransactionLike, target: LockTarget, options?: LockOptions): Promise<void>;
  tryLock(trx: KyselyTransactionLike, target: LockTarget, options?: LockOptions): Promise<boolean>;
  isLocked(key: LockKeyInput): Promise<boolean>;
  inspectLocks(): Promise<AdvisoryLockInfo[]>;
}

/**
 * Binds the adapter to a `Kysely` instance and default options. Per-call options override the
 * defaults; `tryWithLock` and `tryLock` try once unless the call itself sets `timeoutMs`. Its
 * `lock` and `tryLock` accept `signal` (the wait is cancelled from another connection of `db`).
 *
 * @example
 * ```ts
 * import { Kysely, PostgresDialect } from 'kysely';
 * import pg from 'pg';
 * import { advisoryLocks } from '@pglock/kysely';
 *
 * const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: new pg.Pool() }) });
 * const locks = advisoryLocks(db, { namespace: 'shop', timeoutMs: 5_000 });
 * await locks.withLock(`product:${id}`, async (trx) => {
 *   await trx.updateTable('product').set({ stock: 0 }).where('id', '=', id).execute();
 * });
 * ```
 */
export function advisoryLocks<DB>(db: Kysely<DB>, defaults: KyselyLockOptions = {}): KyselyAdvisoryLocks<DB> {
  const { timeoutMs: _wait, ...tryDefaults } = defaults;
  // Only core's options reach lock()/tryLock(): the transaction settings belong to withLock.
  const { isolationLevel: _i, accessMode: _a, ...lockDefaults } = defaults;
  const { timeoutMs: _t, ...tryLockDefaults } = lockDefaults;
  return {
    withLock: (target, fn, options) => withLock(db, target, fn, withDefaults(defaults, options)),
    tryWithLock: (target, fn, options) => tryWithLock(db, target, fn, withDefaults(tryDefaults, options)),
    lock: (trx, target, options) => lockIn(trx, lockRequest(target, options, lockDefaults), db),
    tryLock: (trx, target, options) =>
      tryLockIn(trx, lockRequest(target, options, { timeoutMs: 0, ...tryLockDefaults }), db),
    isLocked: (key) => isLocked(db, key, { namespace: defaults.namespace }),
    inspectLocks: () => inspectLocks(db),
  };
}
