import { describe, expect, it } from 'vitest';
import { InvalidLockKeyError, InvalidLockOptionsError, type LockOptions, lockKey } from '../src/index.ts';
import {
  checkDuration,
  DEFAULT_MAX_KEYS,
  type LockRequest,
  lockRequest,
  MAX_DURATION_MS,
} from '../src/lock-options.ts';

/** The error `fn` throws, checked to be InvalidLockOptionsError. */
function optionsError(fn: () => unknown): InvalidLockOptionsError {
  let error: unknown;
  try {
    fn();
  } catch (e) {
    error = e;
  }
  expect(InvalidLockOptionsError.is(error)).toBe(true);
  return error as InvalidLockOptionsError;
}

/** A value JavaScript callers can pass where the types would refuse it. */
const untyped = (value: unknown) => value as never;

describe('lockRequest: options', () => {
  it('defaults: exclusive, no timeout, no signal', () => {
    expect(lockRequest('job')).toEqual({
      keys: [lockKey('job')],
      shared: false,
      timeoutMs: undefined,
      signal: undefined,
    });
    expect(Object.isFrozen(lockRequest('job'))).toBe(true);
    expect(Object.isFrozen(lockRequest(['a', 'b']).keys)).toBe(true);
    expect(DEFAULT_MAX_KEYS).toBe(64);
  });

  it('takes every option it knows', () => {
    const signal = new AbortController().signal;
    const request = lockRequest('job', { timeoutMs: 0, shared: true, signal, namespace: 'ns', maxKeys: 1 });
    expect(request).toEqual({
      keys: [lockKey('job', { namespace: 'ns' })],
      shared: true,
      timeoutMs: 0,
      signal,
    });
    expect(lockRequest('job', { timeoutMs: MAX_DURATION_MS }).timeoutMs).toBe(MAX_DURATION_MS);
  });

  it.each([
    [null, 'got null'],
    ['fast', 'got string'],
    [5, 'got number'],
    [() => undefined, 'got function'],
  ])('refuses options that are not an object: %j', (options, got) => {
    expect(optionsError(() => lockRequest('job', untyped(options), undefined, 'withLock')).message).toBe(
      `withLock: options must be an object (${got}); omit it for the defaults.`,
    );
  });

  it.each([-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, MAX_DURATION_MS + 1, '100', null, 10n])(
    'refuses timeoutMs %s, saying how to wait without limit',
    (timeoutMs) => {
      expect(optionsError(() => lockRequest('job', { timeoutMs: untyped(timeoutMs) })).message).toBe(
        `lock call: timeoutMs must be an integer from 0 to ${MAX_DURATION_MS} ms (got ${String(timeoutMs)}); omit it to wait without limit.`,
      );
    },
  );

  it.each(['yes', 1, null])('refuses shared %j', (shared) => {
    expect(optionsError(() => lockRequest('job', { shared: untyped(shared) }, undefined, 'v')).message).toBe(
      'v: shared must be a boolean.',
    );
  });

  it('refuses a signal that is not an AbortSignal, and takes one from another realm by its shape', () => {
    for (const signal of [{}, true, { aborted: false }, null]) {
      expect(
        optionsError(() => lockRequest('job', { signal: untyped(signal) }, undefined, 'v')).message,
      ).toBe('v: signal must be an AbortSignal.');
    }
    const lookalike = { aborted: false, addEventListener: () => undefined };
    expect(lockRequest('job', { signal: untyped(lookalike) }).signal).toBe(lookalike);
  });

  it.each([0, -1, 1.5, Number.NaN, '2', null])('refuses maxKeys %j', (maxKeys) => {
    expect(
      optionsError(() => lockRequest(['a'], { maxKeys: untyped(maxKeys) }, undefined, 'v')).message,
    ).toBe('v: maxKeys must be a positive integer.');
  });

  it('refuses a bad namespace as a key error, the namespace being part of the key', () => {
    expect(() => lockRequest('job', { namespace: '' })).toThrow(InvalidLockKeyError);
  });

  it('checks the defaults too, and an option given as undefined keeps the default', () => {
    expect(optionsError(() => lockRequest('job', {}, { timeoutMs: -5 })).message).toContain('(got -5)');
    expect(optionsError(() => lockRequest('job', undefined, { shared: untyped('no') })).message).toBe(
      'lock call: shared must be a boolean.',
    );
    expect(
      lockRequest('job', { timeoutMs: undefined, shared: undefined }, { timeoutMs: 7, shared: true }),
    ).toMatchObject({ timeoutMs: 7, shared: true });
    // A given option wins over the default, also a falsy one.
    expect(lockRequest('job', { timeoutMs: 0, shared: false }, { timeoutMs: 7, shared: true })).toMatchObject(
      {
        timeoutMs: 0,
        shared: false,
      },
    );
  });

  it('options fail before keys: bad options with a bad key is the options error', () => {
    const bad: LockOptions = { timeoutMs: -1 };
    expect(optionsError(() => lockRequest(untyped(1.5), bad)).message).toMatch(/^lock call: timeoutMs/);
    expect(optionsError(() => lockRequest([], bad)).message).toMatch(/^lock call: timeoutMs/);
    expect(optionsError(() => lockRequest(['a', 'b'], { maxKeys: 0 })).message).toMatch(/maxKeys/);
  });
});

describe('lockRequest: keys', () => {
  it('refuses an empty array, too many keys and a sparse array, naming the verb', () => {
    const keyError = (target: unknown, maxKeys?: number) => {
      let error: unknown;
      try {
        lockRequest(untyped(target), maxKeys === undefined ? undefined : { maxKeys }, undefined, 'withLock');
      } catch (e) {
        error = e;
      }
      expect(InvalidLockKeyError.is(error)).toBe(true);
      return error as InvalidLockKeyError;
    };
    const empty: unknown[] = [];
    expect(keyError(empty).message).toBe('withLock: lock at least one key (got an empty array).');
    expect(keyError(empty).input).toBe(empty);
    expect(keyError(['a', 'b', 'c'], 2).message).toBe(
      "withLock: 3 keys in one call exceed maxKeys (2); PostgreSQL's shared lock table is small and shared by every session.",
    );
    // biome-ignore lint/suspicious/noSparseArray: the sparse array is the input under test
    expect(keyError(['a', , 'c']).message).toBe(
      'withLock: the key at index 1 is missing (a sparse array); pass every key.',
    );
    // A bad element is lockKey's error, about the element.
    expect(keyError([1.5]).input).toBe(1.5);
  });

  it('counts maxKeys before dropping duplicates', () => {
    expect(() => lockRequest(['a', 'a'], { maxKeys: 1 })).toThrow(InvalidLockKeyError);
    expect(lockRequest(['a', 'a'], { maxKeys: 2 }).keys).toEqual([lockKey('a')]);
  });

  it('an array always means several keys; a pair is an object', () => {
    expect(lockRequest([1, 2]).keys).toEqual([lockKey(1), lockKey(2)]);
    expect(lockRequest({ pair: [1, 2] }).keys).toEqual([lockKey({ pair: [1, 2] })]);
  });

  it('gives the same request again for the same name and options, and a new one when they differ', () => {
    const first = lockRequest('cached', { timeoutMs: 5 });
    expect(lockRequest('cached', { timeoutMs: 5 })).toBe(first);
    const other: LockRequest = lockRequest('cached', { timeoutMs: 6 });
    expect(other).not.toBe(first);
    expect(other.timeoutMs).toBe(6);
    expect(other.keys).toBe(first.keys);
    expect(lockRequest('cached', { timeoutMs: 6, shared: true }).shared).toBe(true);
    // A signal is the caller's own each time: never a kept request.
    const signal = new AbortController().signal;
    expect(lockRequest('cached', { timeoutMs: 6, signal }).signal).toBe(signal);
    expect(lockRequest('cached', { timeoutMs: 6 }).signal).toBeUndefined();
  });
});

describe('checkDuration', () => {
  it('passes integers from min to MAX_DURATION_MS through', () => {
    expect(checkDuration(10, 'heartbeatMs', 'acquireSessionLock', 10)).toBe(10);
    expect(checkDuration(MAX_DURATION_MS, 'heartbeatMs', 'acquireSessionLock', 10)).toBe(MAX_DURATION_MS);
  });

  it('refuses anything else with the verb, the name, the range, what it got and the hint', () => {
    expect(optionsError(() => checkDuration(9, 'heartbeatMs', 'acquireSessionLock', 10)).message).toBe(
      `acquireSessionLock: heartbeatMs must be an integer from 10 to ${MAX_DURATION_MS} ms (got 9).`,
    );
    expect(optionsError(() => checkDuration('1s', 'ttlMs', 'leader', 1, 'pass milliseconds')).message).toBe(
      `leader: ttlMs must be an integer from 1 to ${MAX_DURATION_MS} ms (got 1s); pass milliseconds.`,
    );
    for (const value of [MAX_DURATION_MS + 1, 2.5, Number.NaN, undefined, null, 5n]) {
      expect(() => checkDuration(value, 'x', 'v', 0)).toThrow(InvalidLockOptionsError);
    }
  });
});
