import { InvalidLockKeyError, InvalidLockOptionsError } from './errors.ts';
import { compareLockKeys, type LockKey, type LockKeyInput, lockKey } from './lock-key.ts';

/** PostgreSQL's `lock_timeout` is an int4 of milliseconds. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/**
 * The default bound on keys per call. About 12,800 held advisory locks fill PostgreSQL's shared lock
 * table (64 per connection × max_connections by default), after which every session's locks fail
 * and new connections are refused; one call must not do that by accident.
 */
export const DEFAULT_MAX_KEYS = 64;

/** One key, or several keys taken together (an array always means several). */
export type LockTarget = LockKeyInput | readonly LockKeyInput[];

/**
 * Options every lock call accepts, in every adapter.
 *
 * @example
 * ```ts
 * import type { LockOptions } from '@pglock/core';
 *
 * const options: LockOptions = { timeoutMs: 2_000, shared: false, namespace: 'billing' };
 * ```
 */
export interface LockOptions {
  /** `0`: try once. Positive: wait at most this long (server-side `lock_timeout`). Absent: wait without limit. */
  readonly timeoutMs?: number | undefined;
  /** Take a shared lock (compatible with other shared holders) instead of an exclusive one. */
  readonly shared?: boolean | undefined;
  /** Aborts a wait: the server-side wait is cancelled and the call rejects with `LockAbortedError`. */
  readonly signal?: AbortSignal | undefined;
  /** Mixed into the hash of string names; see the key spec. */
  readonly namespace?: string | undefined;
  /** Most keys one call may lock (default {@link DEFAULT_MAX_KEYS}). */
  readonly maxKeys?: number | undefined;
}

/** A validated lock call: canonical keys and checked options. Build with {@link lockRequest}. */
export interface LockRequest {
  /** Distinct keys in canonical order ({@link compareLockKeys}). */
  readonly keys: readonly LockKey[];
  readonly shared: boolean;
  readonly timeoutMs: number | undefined;
  readonly signal: AbortSignal | undefined;
}

/**
 * Validates a target and options (merged over `defaults`) into a {@link LockRequest}. Everything an
 * adapter is given passes through here first, so bad input fails before any SQL is sent.
 *
 * @example
 * ```ts
 * import { lockRequest } from '@pglock/core';
 *
 * const request = lockRequest(['account:2', 'account:1'], { timeoutMs: 500 });
 * request.keys.length; // 2, in canonical order
 * ```
 */
export function lockRequest(
  target: LockTarget,
  options: LockOptions = {},
  defaults: LockOptions = {},
): LockRequest {
  const merged = { ...defaults, ...stripUndefined(options) };
  const { timeoutMs, shared = false, signal, namespace, maxKeys = DEFAULT_MAX_KEYS } = merged;
  if (
    timeoutMs !== undefined &&
    (!Number.isInteger(timeoutMs) || timeoutMs < 0 || timeoutMs > MAX_TIMEOUT_MS)
  ) {
    throw new InvalidLockOptionsError(
      `timeoutMs must be an integer from 0 to ${MAX_TIMEOUT_MS} (got ${String(timeoutMs)}); omit it to wait without limit.`,
    );
  }
  if (typeof shared !== 'boolean') throw new InvalidLockOptionsError('shared must be a boolean.');
  if (signal !== undefined && !isAbortSignal(signal)) {
    throw new InvalidLockOptionsError('signal must be an AbortSignal.');
  }
  if (!Number.isInteger(maxKeys) || maxKeys < 1)
    throw new InvalidLockOptionsError('maxKeys must be a positive integer.');

  const inputs: readonly unknown[] = Array.isArray(target) ? target : [target];
  if (inputs.length === 0)
    throw new InvalidLockKeyError('Lock at least one key (got an empty array).', target);
  if (inputs.length > maxKeys) {
    throw new InvalidLockKeyError(
      `${inputs.length} keys in one call exceed maxKeys (${maxKeys}); PostgreSQL's shared lock table is small and shared by every session.`,
      target,
    );
  }
  const keys = inputs.map((input) => lockKey(input as LockKeyInput, { namespace }));
  return Object.freeze({ keys: canonical(keys), shared, timeoutMs, signal });
}

function canonical(keys: readonly LockKey[]): readonly LockKey[] {
  const sorted = [...keys].sort(compareLockKeys);
  return Object.freeze(
    sorted.filter((key, i) => i === 0 || compareLockKeys(sorted[i - 1] as LockKey, key) !== 0),
  );
}

function isAbortSignal(value: unknown): value is AbortSignal {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as AbortSignal).aborted === 'boolean' &&
    typeof (value as AbortSignal).addEventListener === 'function'
  );
}

/**
 * `options` over `defaults`, where an option given as `undefined` does not erase a default.
 *
 * @example
 * ```ts
 * import { withDefaults } from '@pglock/core';
 *
 * withDefaults({ namespace: 'app', timeoutMs: 1_000 }, { timeoutMs: undefined }); // { namespace: 'app', timeoutMs: 1000 }
 * ```
 */
export function withDefaults<T extends object>(defaults: T | undefined, options: T | undefined): T {
  return { ...defaults, ...stripUndefined(options ?? ({} as T)) } as T;
}

function stripUndefined<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as Partial<T>;
}
