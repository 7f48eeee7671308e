import { InvalidLockKeyError, InvalidLockOptionsError } from './errors.ts';
import { compareLockKeys, type LockKey, type LockKeyInput, lockKey } from './lock-key.ts';
import { checkOptionKeys, LOCK_OPTION_KEYS } from './option-keys.ts';

/** PostgreSQL's `lock_timeout` is an int4 of milliseconds; Node's timers hold the same range. */
export const MAX_DURATION_MS = 2 ** 31 - 1;

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
  /**
   * `0`: try once. Positive: wait at most this long, in all (the in-process queue, every key and
   * lock space share one budget; the server enforces it with `lock_timeout`). Absent: wait without limit.
   */
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

// The common call (one name, the same options each time) makes the same request: keep it with its key.
const plainRequests = new WeakMap<LockKey, LockRequest>();

/**
 * Validates a target and options (over `defaults`: an option given as `undefined` keeps the
 * default) into a {@link LockRequest}. Everything an adapter is given passes through here first, so
 * bad input fails before any SQL is sent. `known` are the option names the verb takes (a key of
 * `options` outside them is refused, {@link checkOptionKeys}); the defaults are the factory's,
 * checked where it was made.
 *
 * @example
 * ```ts
 * import { lockRequest } from '@pglock/core/internal';
 *
 * const request = lockRequest(['account:2', 'account:1'], { timeoutMs: 500 });
 * request.keys.length; // 2, in canonical order
 * ```
 */
export function lockRequest(
  target: LockTarget,
  options?: LockOptions,
  defaults?: LockOptions,
  verb = 'lock call',
  known: readonly string[] = LOCK_OPTION_KEYS,
): LockRequest {
  if (options !== undefined) {
    if (typeof options !== 'object' || options === null) {
      throw new InvalidLockOptionsError(
        `${verb}: options must be an object (got ${options === null ? 'null' : typeof options}); omit it for the defaults.`,
      );
    }
    checkOptionKeys(options, known, verb);
  }
  // Only `undefined` means "not given": `timeoutMs: null` from JavaScript is refused below, not
  // read as the default (which is to wait without limit).
  const timeoutMs = given(options?.timeoutMs, defaults?.timeoutMs);
  const shared = given(given(options?.shared, defaults?.shared), false);
  const signal = given(options?.signal, defaults?.signal);
  const namespace = given(options?.namespace, defaults?.namespace);
  const maxKeys = given(given(options?.maxKeys, defaults?.maxKeys), DEFAULT_MAX_KEYS);
  if (timeoutMs !== undefined)
    checkDuration(timeoutMs, 'timeoutMs', verb, 0, 'omit it to wait without limit');
  if (typeof shared !== 'boolean') throw new InvalidLockOptionsError(`${verb}: shared must be a boolean.`);
  if (signal !== undefined && !isAbortSignal(signal)) {
    throw new InvalidLockOptionsError(`${verb}: signal must be an AbortSignal.`);
  }
  if (!Number.isInteger(maxKeys) || maxKeys < 1)
    throw new InvalidLockOptionsError(`${verb}: maxKeys must be a positive integer.`);

  if (!Array.isArray(target)) {
    const key = lockKey(target as LockKeyInput, { namespace });
    // Only keys from names are kept and met again (a numeric key is a new object every call), with
    // the last request made for each: a code path's calls repeat their options.
    if (signal === undefined && key.form === 'bigint' && key.name !== undefined) {
      const kept = plainRequests.get(key);
      if (kept !== undefined && kept.timeoutMs === timeoutMs && kept.shared === shared) return kept;
      const request = Object.freeze({ keys: kept?.keys ?? Object.freeze([key]), shared, timeoutMs, signal });
      plainRequests.set(key, request);
      return request;
    }
    return Object.freeze({ keys: Object.freeze([key]), shared, timeoutMs, signal });
  }
  const inputs = target as readonly unknown[];
  if (inputs.length === 0)
    throw new InvalidLockKeyError(`${verb}: lock at least one key (got an empty array).`, target);
  if (inputs.length > maxKeys) {
    throw new InvalidLockKeyError(
      `${verb}: ${inputs.length} keys in one call exceed maxKeys (${maxKeys}); PostgreSQL's shared lock table is small and shared by every session.`,
      target,
    );
  }
  const keys: LockKey[] = [];
  for (let i = 0; i < inputs.length; i++) {
    if (!Object.hasOwn(inputs, i)) {
      throw new InvalidLockKeyError(
        `${verb}: the key at index ${i} is missing (a sparse array); pass every key.`,
        target,
      );
    }
    keys.push(lockKey(inputs[i] as LockKeyInput, { namespace }));
  }
  return Object.freeze({ keys: canonical(keys), shared, timeoutMs, signal });
}

/**
 * Throws `InvalidLockOptionsError` unless `value` is an integer number of milliseconds from `min`
 * to {@link MAX_DURATION_MS} (the range of `lock_timeout` and of Node's timers: beyond it a timer
 * fires at once).
 *
 * @example
 * ```ts
 * import { checkDuration } from '@pglock/core/internal';
 *
 * checkDuration(1_000, 'heartbeatMs', 'acquireSessionLock', 10);
 * ```
 */
export function checkDuration(
  value: unknown,
  name: string,
  verb: string,
  min: number,
  hint?: string,
): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > MAX_DURATION_MS) {
    throw new InvalidLockOptionsError(
      `${verb}: ${name} must be an integer from ${min} to ${MAX_DURATION_MS} ms (got ${String(value)})${hint ? `; ${hint}` : ''}.`,
    );
  }
  return value;
}

function given<T, F>(value: T | undefined, fallback: F): T | F {
  return value === undefined ? fallback : value;
}

function canonical(keys: LockKey[]): readonly LockKey[] {
  keys.sort(compareLockKeys);
  return Object.freeze(
    keys.filter((key, i) => i === 0 || compareLockKeys(keys[i - 1] as LockKey, key) !== 0),
  );
}

/** Duck-typed: an `AbortSignal` of another realm (or a polyfill) passes. */
export function isAbortSignal(value: unknown): value is AbortSignal {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as AbortSignal).aborted === 'boolean' &&
    typeof (value as AbortSignal).addEventListener === 'function'
  );
}
