import { InvalidLockOptionsError } from './errors.ts';
import { checkDuration } from './lock-options.ts';

/** A duration as a whole number and one unit: `'500ms'`, `'30s'`, `'15m'`, `'1h'`, `'1d'`. */
export type DurationString = `${number}${'ms' | 's' | 'm' | 'h' | 'd'}`;

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const FORM = /^(\d{1,10})(ms|s|m|h|d)$/;

/**
 * Milliseconds of `value`: an integer number of milliseconds, or a {@link DurationString}. Throws
 * `InvalidLockOptionsError` for anything else, and outside `min` … `MAX_DURATION_MS` (2^31-1 ms,
 * about 24.8 days: the range of `lock_timeout` and of Node's timers), so bad input fails before SQL.
 *
 * @example
 * ```ts
 * import { parseDuration } from './duration.ts';
 *
 * parseDuration('15m', 'per', 'runOnce'); // 900000
 * parseDuration(1_000, 'per', 'runOnce'); // 1000
 * ```
 */
export function parseDuration(value: unknown, name: string, verb: string, min = 1): number {
  if (typeof value === 'number') return checkDuration(value, name, verb, min);
  const match = typeof value === 'string' ? FORM.exec(value) : null;
  if (match === null) {
    throw new InvalidLockOptionsError(
      `${verb}: ${name} must be milliseconds or a duration such as '30s', '15m', '1h' or '1d' (a whole number and one unit of ms, s, m, h, d; got ${describe(value)}).`,
    );
  }
  const ms = Number(match[1]) * (UNIT_MS[match[2] as string] as number);
  return checkDuration(ms, name, verb, min, `${String(value)} is ${ms} ms`);
}

function describe(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}
