import { describe, expect, it } from 'vitest';
import { compareLockKeys, InvalidLockKeyError, isLockKey, lockKey } from '../src/index.ts';
import { lockRequest } from '../src/lock-options.ts';

describe('lockKey', () => {
  it('keeps the form and freezes the key', () => {
    const pair = lockKey({ pair: [-1, 2_147_483_647] });
    expect(pair).toEqual({ form: 'pair', pair: [-1, 2_147_483_647] });
    expect(Object.isFrozen(pair)).toBe(true);
    expect(Object.isFrozen(pair.form === 'pair' && pair.pair)).toBe(true);
    expect(lockKey(42)).toEqual({ form: 'bigint', value: 42n });
    expect(lockKey(-(2n ** 63n))).toEqual({ form: 'bigint', value: -(2n ** 63n) });
    expect(lockKey(Number.MAX_SAFE_INTEGER)).toEqual({ form: 'bigint', value: 9007199254740991n });
    expect(isLockKey(pair)).toBe(true);
    expect(lockKey(pair)).toBe(pair);
    expect(isLockKey({ form: 'bigint', value: 1n })).toBe(false);
  });

  it('ignores the namespace for numeric keys and mixes it into names', () => {
    expect(lockKey(7, { namespace: 'a' })).toEqual(lockKey(7));
    const a = lockKey('job', { namespace: 'a' });
    const b = lockKey('job', { namespace: 'b' });
    expect(a.form === 'bigint' && b.form === 'bigint' && a.value !== b.value).toBe(true);
  });

  it.each([
    ['', 'empty'],
    ['\uDC00x', 'surrogate'],
    [Number.POSITIVE_INFINITY, 'safe integer'],
    [-0.5, 'safe integer'],
    [2n ** 63n, 'int64'],
    [{ pair: [0, -(2 ** 31) - 1] }, 'int32'],
    [{ pair: [0, 1.5] }, 'int32'],
    [{ pair: 'ab' }, 'exactly two'],
    [['a'], 'Unsupported'],
    [Symbol('s'), 'Unsupported'],
  ])('rejects %s', (input, message) => {
    let error: unknown;
    try {
      lockKey(input as never);
    } catch (e) {
      error = e;
    }
    expect(InvalidLockKeyError.is(error)).toBe(true);
    expect((error as Error).message).toContain(message);
    expect((error as InvalidLockKeyError).input).toBe(input);
  });

  it('rejects bad namespaces', () => {
    for (const namespace of ['', 'a\u0000b', '\uD800']) {
      expect(() => lockKey('x', { namespace })).toThrow(InvalidLockKeyError);
    }
  });
});

describe('lockRequest', () => {
  it('orders keys canonically and drops duplicates', () => {
    const forward = lockRequest(['b', 'a', { pair: [1, 2] }, 3n, 'a']);
    const backward = lockRequest([{ pair: [1, 2] }, 'a', 3n, 'b']);
    expect(forward.keys).toEqual(backward.keys);
    expect(forward.keys).toHaveLength(4);
    expect(forward.keys.at(-1)).toEqual({ form: 'pair', pair: [1, 2] });
    for (let i = 1; i < forward.keys.length; i++) {
      expect(compareLockKeys(forward.keys[i - 1]!, forward.keys[i]!)).toBeLessThan(0);
    }
  });

  it('merges defaults under options, where undefined options keep the default', () => {
    const request = lockRequest(
      'x',
      { timeoutMs: undefined, shared: true },
      { timeoutMs: 5, namespace: 'ns' },
    );
    expect(request).toMatchObject({ timeoutMs: 5, shared: true });
    expect(request.keys[0]).toMatchObject({ namespace: 'ns' });
  });

  it('bounds the number of keys (default 64, adjustable)', () => {
    const keys = Array.from({ length: 65 }, (_, i) => i);
    expect(() => lockRequest(keys)).toThrow(/maxKeys \(64\)/);
    expect(lockRequest(keys, { maxKeys: 65 }).keys).toHaveLength(65);
  });
});
