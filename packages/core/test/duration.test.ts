import { describe, expect, it } from 'vitest';
import { parseDuration } from '../src/duration.ts';
import { AdvisoryLockError, InvalidLockOptionsError } from '../src/index.ts';
import { MAX_DURATION_MS } from '../src/lock-options.ts';

/** The error `parseDuration` throws for `value`, checked to be the typed one. */
function refusal(value: unknown, min?: number): InvalidLockOptionsError {
  let error: unknown;
  try {
    parseDuration(value, 'per', 'runOnce', min);
  } catch (e) {
    error = e;
  }
  expect(InvalidLockOptionsError.is(error)).toBe(true);
  expect(error).toBeInstanceOf(AdvisoryLockError);
  expect((error as InvalidLockOptionsError).code).toBe('INVALID_LOCK_OPTIONS');
  return error as InvalidLockOptionsError;
}

describe('parseDuration', () => {
  it.each([
    ['500ms', 500],
    ['1s', 1_000],
    ['30s', 30_000],
    ['15m', 900_000],
    ['1h', 3_600_000],
    ['1d', 86_400_000],
    ['24d', 2_073_600_000],
    ['007s', 7_000],
    [`${MAX_DURATION_MS}ms`, MAX_DURATION_MS],
  ])('reads %s as %i ms', (value, ms) => {
    expect(parseDuration(value, 'per', 'runOnce')).toBe(ms);
  });

  it('takes an integer number of milliseconds as is', () => {
    expect(parseDuration(1, 'per', 'runOnce')).toBe(1);
    expect(parseDuration(MAX_DURATION_MS, 'per', 'runOnce')).toBe(MAX_DURATION_MS);
    expect(parseDuration(0, 'per', 'runOnce', 0)).toBe(0);
  });

  it.each([
    ['1.5s', '"1.5s"'],
    ['-1s', '"-1s"'],
    [' 1s', '" 1s"'],
    ['1 s', '"1 s"'],
    ['1S', '"1S"'],
    ['1sec', '"1sec"'],
    ['1w', '"1w"'],
    ['s', '"s"'],
    ['10', '"10"'],
    ['', '""'],
    ['12345678901ms', '"12345678901ms"'],
    [null, 'null'],
    [undefined, 'undefined'],
    [true, 'true'],
  ])('refuses %j, saying which forms it takes and what it got', (value, shown) => {
    expect(refusal(value).message).toBe(
      `runOnce: per must be milliseconds or a duration such as '30s', '15m', '1h' or '1d' (a whole number and one unit of ms, s, m, h, d; got ${shown}).`,
    );
  });

  it('refuses a duration string out of range, saying what it came to', () => {
    expect(refusal('25d').message).toBe(
      'runOnce: per must be an integer from 1 to 2147483647 ms (got 2160000000); 25d is 2160000000 ms.',
    );
    expect(refusal('0s').message).toBe(
      'runOnce: per must be an integer from 1 to 2147483647 ms (got 0); 0s is 0 ms.',
    );
    expect(refusal('5s', 10_000).message).toBe(
      'runOnce: per must be an integer from 10000 to 2147483647 ms (got 5000); 5s is 5000 ms.',
    );
    expect(parseDuration('10s', 'per', 'runOnce', 10_000)).toBe(10_000);
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, MAX_DURATION_MS + 1])(
    'refuses the number %d outside integers from min to MAX_DURATION_MS',
    (value) => {
      expect(refusal(value).message).toBe(
        `runOnce: per must be an integer from 1 to 2147483647 ms (got ${String(value)}).`,
      );
    },
  );
});
