import { deriveKey } from './derive-key.ts';
import { InvalidLockKeyError } from './errors.ts';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;
const brand = Symbol.for('pglock.LockKey');

/**
 * A validated advisory-lock key. PostgreSQL has two lock spaces that never collide: one bigint
 * (`pg_advisory_lock(bigint)`) and a pair of int4 (`pg_advisory_lock(int, int)`); `form` says which.
 * Frozen; make one with {@link lockKey}.
 */
export type LockKey = BigintLockKey | PairLockKey;

/** A key in PostgreSQL's single-bigint lock space. */
export interface BigintLockKey {
  readonly form: 'bigint';
  readonly value: bigint;
  /** The name it was derived from, when it came from a string. */
  readonly name?: string;
  /** The namespace mixed into the hash, when one was given. */
  readonly namespace?: string;
}

/** A key in PostgreSQL's two-int4 lock space. */
export interface PairLockKey {
  readonly form: 'pair';
  readonly pair: readonly [number, number];
}

/**
 * What callers may pass as a key: a name (hashed per the key spec), a safe-integer `number` or an
 * int64 `bigint` (used as is), `{ pair: [a, b] }` for the two-int4 form, or a {@link LockKey}.
 * Arrays are never keys: where an API takes "one key or several", an array means several.
 */
export type LockKeyInput = string | number | bigint | { readonly pair: readonly [number, number] } | LockKey;

/** Options of {@link lockKey}. */
export interface LockKeyOptions {
  /** Mixed into the hash of string names so that apps sharing a database do not collide. Ignored for numeric keys. */
  readonly namespace?: string | undefined;
}

/**
 * Validates `input` and returns the frozen {@link LockKey} object it stands for: `{ form, value }`
 * for the bigint space (the int64 is its `value`; `deriveKey()` returns the int64 alone) or
 * `{ form: 'pair', pair }`. Throws {@link InvalidLockKeyError} for anything that is not a valid key,
 * before any SQL exists.
 *
 * @example
 * ```ts
 * import { deriveKey, lockKey } from '@pglock/core';
 *
 * lockKey('leaderboard'); // { form: 'bigint', value: 7676066025365312217n, name: 'leaderboard' }
 * deriveKey('leaderboard'); // the int64 alone: 7676066025365312217n
 * lockKey('leaderboard', { namespace: 'my-app' });
 * lockKey(42n);
 * lockKey({ pair: [7, 1001] });
 * ```
 */
export function lockKey(input: LockKeyInput, options: LockKeyOptions = {}): LockKey {
  const namespace = options?.namespace;
  if (typeof input === 'string') return namedKey(input, namespace);
  if (namespace !== undefined) assertValidNamespace(namespace);
  if (typeof input === 'bigint') {
    if (input < INT64_MIN || input > INT64_MAX) {
      throw new InvalidLockKeyError(
        `Lock key ${input}n is outside the int64 range PostgreSQL accepts.`,
        input,
      );
    }
    return bigintKey(input);
  }
  if (typeof input === 'number') {
    if (!Number.isSafeInteger(input)) {
      throw new InvalidLockKeyError(
        `Lock key ${input} is not a safe integer; pass a bigint for values beyond 2^53, or a string name.`,
        input,
      );
    }
    return bigintKey(BigInt(input));
  }
  if (isLockKey(input)) return input;
  if (typeof input === 'object' && input !== null && !Array.isArray(input) && 'pair' in input) {
    // Read once: an accessor must not pass validation with one value and be sent with another.
    const pair: unknown = input.pair;
    return pairKey(validPair(pair, input));
  }
  throw new InvalidLockKeyError(
    `Unsupported lock key ${describe(input)}: use a string name, a safe-integer number, an int64 bigint or { pair: [a, b] }.`,
    input,
  );
}

/**
 * True when `value` is a {@link LockKey} made by {@link lockKey} (from any copy of this package).
 *
 * @example
 * ```ts
 * import { isLockKey, lockKey } from '@pglock/core';
 *
 * isLockKey(lockKey('a')); // true
 * isLockKey({ form: 'bigint', value: 1n }); // false: not validated
 * ```
 */
export function isLockKey(value: unknown): value is LockKey {
  return typeof value === 'object' && value !== null && (value as { [brand]?: unknown })[brand] === true;
}

/**
 * Orders keys the same way in every process (bigint form first, then pairs, each ascending), so
 * that two callers locking the same set cannot deadlock each other.
 *
 * @example
 * ```ts
 * import { compareLockKeys, lockKey } from '@pglock/core';
 *
 * const keys = ['b', 'a'].map((name) => lockKey(name)).sort(compareLockKeys);
 * ```
 */
export function compareLockKeys(a: LockKey, b: LockKey): number {
  if (a.form !== b.form) return a.form === 'bigint' ? -1 : 1;
  if (a.form === 'bigint' && b.form === 'bigint') return a.value < b.value ? -1 : a.value > b.value ? 1 : 0;
  const [a0, a1] = (a as PairLockKey).pair;
  const [b0, b1] = (b as PairLockKey).pair;
  return a0 - b0 || a1 - b1;
}

/**
 * A short human-readable label for logs and error messages: the name when known, else the value.
 *
 * @example
 * ```ts
 * import { formatLockKey, lockKey } from '@pglock/core';
 *
 * formatLockKey(lockKey({ pair: [1, 2] })); // "(1, 2)"
 * ```
 */
export function formatLockKey(key: LockKey): string {
  if (key.form === 'pair') return `(${key.pair[0]}, ${key.pair[1]})`;
  if (key.name === undefined) return `${key.value}`;
  // Cut by code points, so that a long name never ends in half an emoji.
  const points = key.name.length > 60 ? Array.from(key.name) : undefined;
  const label = points && points.length > 60 ? `${points.slice(0, 57).join('')}...` : key.name;
  return key.namespace === undefined
    ? JSON.stringify(label)
    : `${JSON.stringify(key.namespace)}:${JSON.stringify(label)}`;
}

// The brand lives on a shared prototype (itself an heir of Object.prototype), so keys print and
// compare as plain `{ form, value }` objects, and a key costs a plain object's allocation: a key is
// made per call for numeric input, and a property defined on each object (the brand as a
// non-enumerable own property) cost ten times as much (no spread or `delete` either: they drop the
// object into slow dictionary mode).
const KEY_PROTOTYPE: object = Object.freeze(Object.create(Object.prototype, { [brand]: { value: true } }));

function bigintKey(value: bigint, name?: string, namespace?: string): BigintLockKey {
  const key = Object.create(KEY_PROTOTYPE) as {
    form: 'bigint';
    value: bigint;
    name?: string;
    namespace?: string;
  };
  key.form = 'bigint';
  key.value = value;
  // Optional fields are left off rather than set to undefined, so keys compare and print cleanly.
  if (name !== undefined) key.name = name;
  if (namespace !== undefined) key.namespace = namespace;
  return Object.freeze(key);
}

function pairKey(pair: [number, number]): PairLockKey {
  const key = Object.create(KEY_PROTOTYPE) as { form: 'pair'; pair: readonly [number, number] };
  key.form = 'pair';
  key.pair = Object.freeze(pair);
  return Object.freeze(key);
}

function validPair(pair: unknown, input: unknown): [number, number] {
  if (!Array.isArray(pair) || pair.length !== 2) {
    throw new InvalidLockKeyError('A pair key needs exactly two int32 numbers: { pair: [a, b] }.', input);
  }
  // Each member is read once, into the value that is validated and then sent.
  const members: [unknown, unknown] = [pair[0], pair[1]];
  for (const part of members) {
    if (typeof part !== 'number' || !Number.isInteger(part) || part < INT32_MIN || part > INT32_MAX) {
      throw new InvalidLockKeyError(
        `Pair key member ${describe(part)} is not an int32 (${INT32_MIN}..${INT32_MAX}).`,
        input,
      );
    }
  }
  return members as [number, number];
}

// Names repeat (one per code path that locks), and hashing one costs more than the rest of a lock
// call, so derived keys are kept; the bound keeps an app that locks per-row names from growing it.
const NAMED_CACHE_MAX = 4_096;
const named = new Map<string, LockKey>();

function namedKey(name: string, namespace: string | undefined): LockKey {
  const id = namespace === undefined ? name : `${namespace}\u0000${name}`;
  const cached = named.get(id);
  if (
    cached !== undefined &&
    (cached as BigintLockKey).name === name &&
    (cached as BigintLockKey).namespace === namespace
  )
    return cached;
  if (namespace !== undefined) assertValidNamespace(namespace);
  assertValidName(name);
  const key = bigintKey(deriveKey(name, namespace), name, namespace);
  if (named.size >= NAMED_CACHE_MAX) named.delete(named.keys().next().value as string);
  named.set(id, key);
  return key;
}

function assertValidName(name: string): void {
  if (name.length === 0) throw new InvalidLockKeyError('Lock names must not be empty.', name);
  if (!isWellFormed(name)) {
    throw new InvalidLockKeyError(
      'Lock name contains a lone UTF-16 surrogate, which has no UTF-8 form and so no key.',
      name,
    );
  }
}

function assertValidNamespace(namespace: unknown): void {
  if (typeof namespace !== 'string' || namespace.length === 0) {
    throw new InvalidLockKeyError('A namespace must be a non-empty string.', namespace);
  }
  // 0x00 separates namespace from name in the hash, so a namespace containing it would be ambiguous.
  if (namespace.includes('\u0000')) {
    throw new InvalidLockKeyError(
      'A namespace must not contain the NUL character (the separator).',
      namespace,
    );
  }
  if (!isWellFormed(namespace)) {
    throw new InvalidLockKeyError('Namespace contains a lone UTF-16 surrogate.', namespace);
  }
}

function isWellFormed(text: string): boolean {
  return !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);
}

function describe(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `of type ${typeof value}`;
}
