/**
 * The `pglock` command's own exit codes, from BSD's sysexits.h where one fits, so that shell scripts
 * and cron wrappers can tell "busy, try later" from "misconfigured". A command run by `pglock run`
 * passes its own code through, so these only mean something when pglock itself ended the run.
 *
 * @example
 * ```ts
 * import { ExitCode } from '@pglock/cli';
 *
 * if (code === ExitCode.busy) console.log('another run holds the lock');
 * ```
 */
export const ExitCode = {
  ok: 0,
  /** Bad arguments, a bad `--url`, or an unreadable `--names` file (EX_USAGE). */
  usage: 64,
  /** PostgreSQL cannot be reached or refused the login (EX_UNAVAILABLE). */
  unavailable: 69,
  /** The lock was lost while the command ran; the command was stopped (EX_SOFTWARE). */
  lost: 70,
  /** The lock is busy (`--timeout 0`) or the wait timed out (EX_TEMPFAIL). */
  busy: 75,
  /** The database role lacks a permission pglock needs (EX_NOPERM). */
  noPermission: 77,
  /** The command could not be executed (as shells do). */
  notExecutable: 126,
  /** The command was not found (as shells do). */
  notFound: 127,
} as const;

/**
 * An error the CLI reports as one line on stderr, then exits with `exitCode`.
 *
 * @example
 * ```ts
 * import { CliError, ExitCode } from '@pglock/cli';
 *
 * throw new CliError('--timeout must be a duration like 30s', ExitCode.usage);
 * ```
 */
export class CliError extends Error {
  readonly exitCode: number;
  /** The command's usage, printed after the message (for mistakes in the arguments). */
  readonly usage: string | undefined;

  constructor(message: string, exitCode: number, options?: { cause?: unknown; usage?: string }) {
    super(message, options);
    this.name = new.target.name;
    this.exitCode = exitCode;
    this.usage = options?.usage;
  }
}
