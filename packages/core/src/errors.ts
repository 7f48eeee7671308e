import type { LockKey } from './lock-key.ts';

const brand = Symbol.for('pglock.AdvisoryLockError');

/** The string codes of pglock's errors, one per subclass. */
export type AdvisoryLockErrorCode =
  | 'LOCK_NOT_ACQUIRED'
  | 'LOCK_ABORTED'
  | 'LOCK_DEADLOCK'
  | 'LOCK_LOST'
  | 'INVALID_LOCK_KEY'
  | 'INVALID_LOCK_OPTIONS'
  | 'LOCK_QUERY_FAILED'
  | 'LOCK_USAGE'
  | 'TRANSACTION_ROLLED_BACK'
  | 'LOCK_TABLE_MISSING'
  | 'SCHEDULE_MISMATCH'
  | 'JOB_TIMED_OUT';

/** Fields every pglock error accepts. */
export interface AdvisoryLockErrorOptions {
  /** The keys the failed call asked for, in the order they were (or would have been) taken. */
  readonly keys?: readonly LockKey[];
  /** The driver's or ORM's own error, when one caused this. */
  readonly cause?: unknown;
}

/**
 * Base class of every error pglock throws. Check with {@link AdvisoryLockError.is} rather than
 * `instanceof`: the brand survives two copies of `@pglock/core` in one app, `instanceof` does not.
 *
 * @example
 * ```ts
 * import { AdvisoryLockError } from '@pglock/core';
 *
 * try {
 *   await locks.withLock('nightly-report', run, { timeoutMs: 0 });
 * } catch (error) {
 *   if (AdvisoryLockError.is(error) && error.code === 'LOCK_NOT_ACQUIRED') console.log('another instance runs it');
 *   else throw error;
 * }
 * ```
 */
export class AdvisoryLockError extends Error {
  /** Stable, machine-readable reason. */
  readonly code: AdvisoryLockErrorCode;
  /** The keys the failed call asked for (empty when the error is about the input itself). */
  readonly keys: readonly LockKey[];

  constructor(code: AdvisoryLockErrorCode, message: string, options: AdvisoryLockErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.keys = options.keys ?? [];
  }

  /** The first (or only) key of the failed call. */
  get key(): LockKey | undefined {
    return this.keys[0];
  }

  /** True for any pglock error, from any copy of the package. */
  static is(value: unknown): value is AdvisoryLockError {
    return typeof value === 'object' && value !== null && (value as { [brand]?: unknown })[brand] === true;
  }

  static {
    Object.defineProperty(AdvisoryLockError.prototype, brand, { value: true });
  }
}

export function isCode<C extends AdvisoryLockErrorCode>(value: unknown, code: C): boolean {
  return AdvisoryLockError.is(value) && value.code === code;
}

/**
 * The lock was not acquired: a try found it taken (`timeoutMs: 0`) or the bounded wait elapsed.
 *
 * @example
 * ```ts
 * import { LockNotAcquiredError } from '@pglock/core';
 *
 * try {
 *   await locks.withLock('leaderboard', rebuild, { timeoutMs: 2_000 });
 * } catch (error) {
 *   if (LockNotAcquiredError.is(error)) console.log(`busy for ${error.timeoutMs} ms, try later`);
 *   else throw error;
 * }
 * ```
 */
export class LockNotAcquiredError extends AdvisoryLockError {
  /** The wait that elapsed: 0 for a single try, `undefined` when the server's own `lock_timeout` ended it. */
  readonly timeoutMs: number | undefined;

  constructor(
    message: string,
    options: AdvisoryLockErrorOptions & { readonly timeoutMs: number | undefined },
  ) {
    super('LOCK_NOT_ACQUIRED', message, options);
    this.timeoutMs = options.timeoutMs;
  }

  static override is(value: unknown): value is LockNotAcquiredError {
    return isCode(value, 'LOCK_NOT_ACQUIRED');
  }
}

/**
 * The caller's `AbortSignal` fired while waiting. The server-side wait was cancelled and nothing
 * stays locked (see {@link LockAbortedError.held} for the one exception). The signal's `reason` is
 * kept as `reason`.
 *
 * @example
 * ```ts
 * import { LockAbortedError } from '@pglock/core';
 *
 * const controller = new AbortController();
 * setTimeout(() => controller.abort(), 1_000);
 * await locks.withLock('import', run, { signal: controller.signal }).catch((error) => {
 *   if (!LockAbortedError.is(error)) throw error;
 * });
 * ```
 */
export class LockAbortedError extends AdvisoryLockError {
  /** `signal.reason` of the signal that fired. */
  readonly reason: unknown;
  /**
   * True only when the abort landed as the lock was granted inside a transaction of yours
   * (`lock(tx, …)`): the lock is then held until that transaction ends. Otherwise nothing was locked.
   */
  readonly held: boolean;

  constructor(
    message: string,
    options: AdvisoryLockErrorOptions & { readonly reason: unknown; readonly held?: boolean },
  ) {
    super('LOCK_ABORTED', message, options);
    this.reason = options.reason;
    this.held = options.held ?? false;
  }

  static override is(value: unknown): value is LockAbortedError {
    return isCode(value, 'LOCK_ABORTED');
  }
}

/**
 * PostgreSQL found a deadlock (SQLSTATE 40P01) between this wait and another session's locks, and
 * chose this wait as the victim. Keys of one call are ordered so they cannot deadlock each other;
 * this comes from nesting locks in different orders across calls.
 *
 * @example
 * ```ts
 * import { LockDeadlockError } from '@pglock/core';
 *
 * await locks.withLock(['a', 'b'], transfer).catch((error) => {
 *   if (LockDeadlockError.is(error)) return locks.withLock(['a', 'b'], transfer); // retry once
 *   throw error;
 * });
 * ```
 */
export class LockDeadlockError extends AdvisoryLockError {
  constructor(message: string, options: AdvisoryLockErrorOptions = {}) {
    super('LOCK_DEADLOCK', message, options);
  }

  static override is(value: unknown): value is LockDeadlockError {
    return isCode(value, 'LOCK_DEADLOCK');
  }
}

/**
 * A held session lock is gone: its connection died (backend terminated, server restart, network
 * cut), or the release found it no longer held. Stop the work the lock protected.
 *
 * @example
 * ```ts
 * import { LockLostError } from '@pglock/core';
 *
 * handle.signal.addEventListener('abort', () => {
 *   if (LockLostError.is(handle.signal.reason)) scheduler.stop();
 * });
 * ```
 */
export class LockLostError extends AdvisoryLockError {
  constructor(message: string, options: AdvisoryLockErrorOptions = {}) {
    super('LOCK_LOST', message, options);
  }

  static override is(value: unknown): value is LockLostError {
    return isCode(value, 'LOCK_LOST');
  }
}

/**
 * A lock key was rejected before any SQL was sent: empty or ill-formed name, a number that is not a
 * safe integer, a bigint outside int64, a pair member outside int32, or too many keys.
 *
 * @example
 * ```ts
 * import { InvalidLockKeyError, lockKey } from '@pglock/core';
 *
 * try {
 *   lockKey(1.5);
 * } catch (error) {
 *   if (InvalidLockKeyError.is(error)) console.log(error.message);
 * }
 * ```
 */
export class InvalidLockKeyError extends AdvisoryLockError {
  /** The rejected input, as given. */
  readonly input: unknown;

  constructor(message: string, input: unknown) {
    super('INVALID_LOCK_KEY', message);
    this.input = input;
  }

  static override is(value: unknown): value is InvalidLockKeyError {
    return isCode(value, 'INVALID_LOCK_KEY');
  }
}

/**
 * An option was rejected before any SQL was sent (a negative `timeoutMs`, an empty namespace, a
 * combination an adapter cannot honour).
 *
 * @example
 * ```ts
 * import { InvalidLockOptionsError } from '@pglock/core';
 *
 * await locks.withLock('job', run, { timeoutMs: -1 }).catch((error) => {
 *   if (InvalidLockOptionsError.is(error)) console.log(error.message);
 * });
 * ```
 */
export class InvalidLockOptionsError extends AdvisoryLockError {
  constructor(message: string) {
    super('INVALID_LOCK_OPTIONS', message);
  }

  static override is(value: unknown): value is InvalidLockOptionsError {
    return isCode(value, 'INVALID_LOCK_OPTIONS');
  }
}

/**
 * A pglock function was called in a way that cannot give the protection it promises: a
 * transaction-scoped lock outside a transaction, a session lock through a transaction-mode pooler, a
 * second call on a connection that is busy with one, a nested call its callback did not await (the
 * outer call waited for it, then rolled back), a lock call on the transaction of a callback that has
 * settled, a nested call that rolled back to its savepoint while the outer callback sent statements
 * beside it (rolled back too). Nothing was left locked and nothing of the refused call was committed.
 * The message names the function and says what to do instead.
 *
 * @example
 * ```ts
 * import { LockUsageError } from '@pglock/core';
 *
 * await locks.acquireSessionLock('leader').catch((error) => {
 *   if (LockUsageError.is(error)) console.error(error.message); // e.g. "through a transaction-mode pooler"
 *   throw error;
 * });
 * ```
 */
export class LockUsageError extends AdvisoryLockError {
  constructor(message: string, options: AdvisoryLockErrorOptions = {}) {
    super('LOCK_USAGE', message, options);
  }

  static override is(value: unknown): value is LockUsageError {
    return isCode(value, 'LOCK_USAGE');
  }
}

/**
 * A statement pglock sent failed in the database for a reason that is not about the lock itself (a
 * dropped connection, a permission, a statement timeout). The driver's error is the `cause`.
 *
 * @example
 * ```ts
 * import { LockQueryError } from '@pglock/core';
 *
 * await locks.withLock('job', run).catch((error) => {
 *   if (LockQueryError.is(error)) console.error('database problem:', error.cause);
 *   throw error;
 * });
 * ```
 */
export class LockQueryError extends AdvisoryLockError {
  constructor(message: string, options: AdvisoryLockErrorOptions = {}) {
    super('LOCK_QUERY_FAILED', message, options);
  }

  static override is(value: unknown): value is LockQueryError {
    return isCode(value, 'LOCK_QUERY_FAILED');
  }
}

/**
 * The callback of `withLock` resolved, but PostgreSQL had already failed its transaction (a statement
 * in it failed and the callback caught the error), so the COMMIT would have been a ROLLBACK: nothing
 * the callback wrote was saved. pglock rolled the transaction back and reports it instead of resolving
 * as if the work had been written. Let the statement's error leave the callback, or use a savepoint
 * (a nested `withLock`) around the statement that may fail.
 *
 * @example
 * ```ts
 * import { TransactionRolledBackError } from '@pglock/core';
 *
 * await locks.withLock('import', run).catch((error) => {
 *   if (TransactionRolledBackError.is(error)) console.error('nothing was saved:', error.message);
 *   throw error;
 * });
 * ```
 */
export class TransactionRolledBackError extends AdvisoryLockError {
  constructor(message: string, options: AdvisoryLockErrorOptions = {}) {
    super('TRANSACTION_ROLLED_BACK', message, options);
  }

  static override is(value: unknown): value is TransactionRolledBackError {
    return isCode(value, 'TRANSACTION_ROLLED_BACK');
  }
}
