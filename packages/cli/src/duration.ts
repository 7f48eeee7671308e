import { CliError, ExitCode } from './exit-codes.ts';

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/**
 * Parses a duration such as `500ms`, `30s`, `2m`, `1h` or `1m30s` into milliseconds. A bare number
 * is seconds (as `timeout(1)` reads it); `0` means "try once".
 *
 * @example
 * ```ts
 * import { parseDuration } from '@pglock/cli';
 *
 * parseDuration('1m30s'); // 90000
 * ```
 */
export function parseDuration(text: string, option = '--timeout'): number {
  const trimmed = text.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return checked(Number(trimmed) * 1_000, text, option);
  const parts = [...trimmed.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)];
  if (trimmed === '' || parts.map((p) => p[0]).join('') !== trimmed) {
    throw new CliError(
      `${option} must be a duration like 500ms, 30s, 2m or 1m30s (got ${JSON.stringify(text)}).`,
      ExitCode.usage,
    );
  }
  return checked(
    parts.reduce((sum, [, amount, unit]) => sum + Number(amount) * (UNITS[unit as string] as number), 0),
    text,
    option,
  );
}

function checked(ms: number, text: string, option: string): number {
  // PostgreSQL's lock_timeout is an int4 of milliseconds.
  if (!Number.isFinite(ms) || Math.round(ms) > 2 ** 31 - 1) {
    throw new CliError(`${option} ${text} is longer than PostgreSQL allows (about 24 days).`, ExitCode.usage);
  }
  return Math.round(ms);
}

/**
 * Formats milliseconds compactly for an 80-column table: `850ms`, `12.3s`, `4m05s`, `3h12m`, `2d04h`.
 *
 * @example
 * ```ts
 * import { formatDuration } from '@pglock/cli';
 *
 * formatDuration(245_000); // '4m05s'
 * ```
 */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.max(0, Math.round(ms))}ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)}s`;
  const s = Math.floor(ms / 1_000);
  const pad = (n: number) => String(n).padStart(2, '0');
  if (s < 3_600) return `${Math.floor(s / 60)}m${pad(s % 60)}s`;
  if (s < 86_400) return `${Math.floor(s / 3_600)}h${pad(Math.floor((s % 3_600) / 60))}m`;
  return `${Math.floor(s / 86_400)}d${pad(Math.floor((s % 86_400) / 3_600))}h`;
}
