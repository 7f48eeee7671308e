import { lockVerbs } from './create-advisory-locks.ts';
import type { AdvisoryLockInfo } from './inspect-locks.ts';
import type { LeaderCampaign, LeaderOptions } from './leader.ts';
import type { LockKeyInput } from './lock-key.ts';
import type { LockOptions, LockTarget } from './lock-options.ts';
import type { LockPort } from './lock-port.ts';
import type { RunOnceContext, RunOnceOptions, RunOnceResult } from './run-once.ts';
import type { SessionLock, SessionLockOptions } from './session-lock.ts';
import type { TryResult, WithLockOptions } from './transaction-lock.ts';
import type { TransactionSettings } from './transaction-settings.ts';

/**
 * Every verb as a plain function taking the database (or the transaction) first, typed here once:
 * `Db` is what the transaction verbs take, `Tx` what callbacks get, `InTx` what `lock`/`tryLock` take
 * (a transaction only), `Root` what the session verbs take (a handle that can pin a connection).
 * An adapter exports the verbs whose types need nothing of its ORM as they are
 * (`export const lock = functions.lock`), and types the others (a callback's `tx` that depends on
 * the database's type) in a line over the same function.
 */
export interface LockFunctions<
  Db,
  Tx,
  InTx = Tx,
  S extends TransactionSettings = TransactionSettings,
  Root = Db,
> {
  withLock<T>(
    db: Db,
    target: LockTarget,
    fn: (tx: Tx) => Promise<T>,
    options?: WithLockOptions<S>,
  ): Promise<T>;
  tryWithLock<T>(
    db: Db,
    target: LockTarget,
    fn: (tx: Tx) => Promise<T>,
    options?: WithLockOptions<S>,
  ): Promise<TryResult<T>>;
  lock(tx: InTx, target: LockTarget, options?: LockOptions): Promise<void>;
  tryLock(tx: InTx, target: LockTarget, options?: LockOptions): Promise<boolean>;
  isLocked(db: Db, key: LockKeyInput, options?: Pick<LockOptions, 'namespace'>): Promise<boolean>;
  inspectLocks(db: Db): Promise<AdvisoryLockInfo[]>;
  runOnce<T>(
    db: Db,
    name: string,
    options: RunOnceOptions<S>,
    fn: (tx: Tx, run: RunOnceContext) => Promise<T>,
  ): Promise<RunOnceResult<T>>;
  acquireSessionLock(db: Root, target: LockTarget, options?: SessionLockOptions): Promise<SessionLock>;
  tryAcquireSessionLock(
    db: Root,
    target: LockTarget,
    options?: SessionLockOptions,
  ): Promise<SessionLock | undefined>;
  withSessionLock<T>(
    db: Root,
    target: LockTarget,
    fn: (signal: AbortSignal) => Promise<T>,
    options?: SessionLockOptions,
  ): Promise<T>;
  leader(db: Root, name: string, options: LeaderOptions): LeaderCampaign;
}

/**
 * Builds {@link LockFunctions} over a port: each call runs the verb of the handle's factory
 * ({@link lockVerbs}: made once per handle, without defaults). `lock(tx)` and `tryLock(tx)` use the
 * transaction's own, as the handle core asks the port about.
 *
 * @example
 * ```ts
 * import { lockFunctions } from '@pglock/core/adapter';
 *
 * const functions = lockFunctions<MyDb, MyTx>(myPort);
 * export const lock = functions.lock; // (tx: MyTx, target, options?) => Promise<void>
 * ```
 */
export function lockFunctions<
  Db,
  Tx,
  InTx = Tx,
  S extends TransactionSettings = TransactionSettings,
  Root = Db,
>(port: LockPort<Db, Tx>): LockFunctions<Db, Tx, InTx, S, Root> {
  const verbs = lockVerbs<Db, Tx, InTx, S>(port);
  // A transaction or a session handle is a handle of the port's too: the casts only widen.
  const of = (handle: InTx | Root) => verbs(handle as unknown as Db);
  return {
    withLock: (db, target, fn, options) => verbs(db).withLock(target, fn, options),
    tryWithLock: (db, target, fn, options) => verbs(db).tryWithLock(target, fn, options),
    lock: (tx, target, options) => of(tx).lock(tx, target, options),
    tryLock: (tx, target, options) => of(tx).tryLock(tx, target, options),
    isLocked: (db, key, options) => verbs(db).isLocked(key, options),
    inspectLocks: (db) => verbs(db).inspectLocks(),
    runOnce: (db, name, options, fn) => verbs(db).runOnce(name, options, fn),
    acquireSessionLock: (db, target, options) => of(db).acquireSessionLock(target, options),
    tryAcquireSessionLock: (db, target, options) => of(db).tryAcquireSessionLock(target, options),
    withSessionLock: (db, target, fn, options) => of(db).withSessionLock(target, fn, options),
    leader: (db, name, options) => of(db).leader(name, options),
  };
}
