import {
  type AdvisoryLockInfo,
  type LockKeyInput,
  type LockTarget,
  type TryResult,
  withDefaults,
} from '@pglock/core';
import type { ClientOf, PgClientLike, PgQueryable } from './pg-types.ts';
import {
  inspectLocks,
  isLocked,
  lock,
  type PgLockOptions,
  tryLock,
  tryWithLock,
  withLock,
} from './with-lock.ts';

/** The adapter's functions bound to one pool (or client) and default options. */
export interface PgAdvisoryLocks<C extends PgClientLike = PgClientLike> {
  withLock<T>(target: LockTarget, fn: (client: C) => Promise<T>, options?: PgLockOptions): Promise<T>;
  tryWithLock<T>(
    target: LockTarget,
    fn: (client: C) => Promise<T>,
    options?: PgLockOptions,
  ): Promise<TryResult<T>>;
  lock(client: PgClientLike, target: LockTarget, options?: PgLockOptions): Promise<void>;
  tryLock(client: PgClientLike, target: LockTarget, options?: PgLockOptions): Promise<boolean>;
  isLocked(key: LockKeyInput): Promise<boolean>;
  inspectLocks(): Promise<AdvisoryLockInfo[]>;
}

/**
 * Binds the adapter to a `pg.Pool` (or one `pg.Client`) and default options. Per-call options
 * override the defaults; `tryWithLock` and `tryLock` try once unless the call itself sets
 * `timeoutMs`.
 *
 * @example
 * ```ts
 * import pg from 'pg';
 * import { advisoryLocks } from '@pglock/pg';
 *
 * const locks = advisoryLocks(new pg.Pool(), { namespace: 'billing', timeoutMs: 5_000 });
 * await locks.withLock(`account:${id}`, async (client) => {
 *   await client.query('UPDATE accounts SET balance = balance - $1 WHERE id = $2', [amount, id]);
 * });
 * ```
 */
export function advisoryLocks<D extends PgQueryable>(
  db: D,
  defaults: PgLockOptions = {},
): PgAdvisoryLocks<ClientOf<D>> {
  const { timeoutMs: _wait, ...tryDefaults } = defaults;
  return {
    withLock: (target, fn, options) =>
      withLock(db, target, (c) => fn(c as ClientOf<D>), withDefaults(defaults, options)),
    tryWithLock: (target, fn, options) =>
      tryWithLock(db, target, (c) => fn(c as ClientOf<D>), withDefaults(tryDefaults, options)),
    lock: (client, target, options) => lock(client, target, withDefaults(defaults, options)),
    tryLock: (client, target, options) => tryLock(client, target, withDefaults(tryDefaults, options)),
    isLocked: (key) => isLocked(db, key, { namespace: defaults.namespace }),
    inspectLocks: () => inspectLocks(db),
  };
}
