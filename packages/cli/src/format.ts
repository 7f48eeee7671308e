import { formatDuration } from './duration.ts';
import type { LockEntry, LockReport, LockSession } from './lock-report.ts';

/** Terminal width the human output is laid out for. */
export const WIDTH = 80;

/** ANSI styling, or none. */
export interface Style {
  readonly bold: (text: string) => string;
  readonly dim: (text: string) => string;
  readonly green: (text: string) => string;
  readonly yellow: (text: string) => string;
  readonly red: (text: string) => string;
}

/** No styling (a pipe, `NO_COLOR`). */
export const plainStyle: Style = { bold: String, dim: String, green: String, yellow: String, red: String };
const sgr = (open: number, close: number) => (text: string) => `\x1b[${open}m${text}\x1b[${close}m`;
const ansiStyle: Style = {
  bold: sgr(1, 22),
  dim: sgr(2, 22),
  green: sgr(32, 39),
  yellow: sgr(33, 39),
  red: sgr(31, 39),
};

/**
 * Colour only on a terminal, and never when `NO_COLOR` is set (https://no-color.org).
 *
 * @example
 * ```ts
 * import { styleFor } from '@pglock/cli';
 *
 * const style = styleFor(process.stdout, process.env);
 * ```
 */
export function styleFor(stream: { readonly isTTY?: boolean }, env: NodeJS.ProcessEnv): Style {
  return stream.isTTY === true && (env.NO_COLOR ?? '') === '' ? ansiStyle : plainStyle;
}

/**
 * Renders a lock report for a terminal: at most {@link WIDTH} columns, one block per key, contention
 * first. Names and application names are stripped of control characters (an `application_name` is
 * chosen by any client and must not drive the terminal).
 *
 * @example
 * ```ts
 * import { formatLockReport, styleFor } from '@pglock/cli';
 *
 * process.stdout.write(formatLockReport(report, styleFor(process.stdout, process.env)));
 * ```
 */
export function formatLockReport(report: LockReport, style: Style = plainStyle): string {
  const lines: string[] = [];
  const held = report.locks.reduce((n, l) => n + l.holders.length, 0);
  const waiting = report.locks.reduce((n, l) => n + l.waiters.length, 0);
  const time = report.takenAt.slice(11, 19);
  if (report.locks.length === 0) {
    lines.push(`No advisory locks are held or awaited in this database.  ${style.dim(`(${time} UTC)`)}`);
  } else {
    const summary = `${plural(report.locks.length, 'key')}, ${plural(held, 'holder')}, ${waiting} waiting`;
    lines.push(`${style.bold(summary)}  ${style.dim(`(${time} UTC)`)}`);
    for (const lock of report.locks) lines.push('', ...formatEntry(lock, style));
  }
  for (const warning of report.warnings) lines.push(style.yellow(`warning: ${clean(warning)}`));
  return `${lines.join('\n')}\n`;
}

function formatEntry(lock: LockEntry, style: Style): string[] {
  const keyText =
    lock.key.form === 'bigint' ? lock.key.value : `pair (${lock.key.pair[0]}, ${lock.key.pair[1]})`;
  const waitText = lock.waiters.length > 0 ? `  ${lock.waiters.length} waiting` : '';
  const room = WIDTH - keyText.length - waitText.length - 2;
  const label =
    lock.name === null
      ? style.dim(fit('(name unknown)', room))
      : style.bold(
          fit(
            lock.namespace === null ? clean(lock.name) : `${clean(lock.name)} [${clean(lock.namespace)}]`,
            room,
          ),
        );
  const head = `${label}  ${style.dim(keyText)}${waitText ? style.red(waitText) : ''}`;
  return [
    head,
    ...lock.holders.map((s) => sessionLine('held', s, s.heldMs, style.green)),
    ...lock.waiters.map((s) => sessionLine('wait', s, s.waitedMs, style.yellow)),
  ];
}

// 2 + 4 + 1 + 5 + 1 + 11 + 1 + 22 + 1 + 16 + 1 + 8 = 73 columns.
function sessionLine(
  role: string,
  s: LockSession,
  ms: number | null | undefined,
  colour: (text: string) => string,
): string {
  const mode = s.mode === 'shared' ? 'share' : 'excl';
  const pid = `pid ${s.pid ?? '-'}`;
  const app = fit(clean(s.applicationName ?? '') || '-', 22);
  const client = fit(s.clientAddress ?? 'local', 16);
  const time = ms === null || ms === undefined ? '-' : formatDuration(ms);
  return `  ${colour(role)} ${mode.padEnd(5)} ${pid.padEnd(11)} ${app.padEnd(22)} ${client.padEnd(16)} ${time.padStart(8)}`;
}

/** Truncates to `width` characters with an ellipsis. */
export function fit(text: string, width: number): string {
  const chars = [...text];
  return chars.length <= width ? text : `${chars.slice(0, Math.max(0, width - 1)).join('')}…`;
}

/** Control characters replaced by `?`: what a client chose must not drive the terminal. */
export function clean(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point.
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}
