import { LockAbortedError, LockNotAcquiredError } from '@pglock/core';
import { withLock } from '@pglock/pg';
import { connectionError, connectionTarget, openPool } from '../connection.ts';
import { CliError, ExitCode } from '../exit-codes.ts';
import { type CommandSpec, defineCommand } from '../parse-command.ts';
import { onStopSignals } from './io.ts';
import { busyText, lockArgs, lockLabel, lockOptions } from './lock-args.ts';
import { signalExitCode } from './signals.ts';

const waitSpec = {
  name: 'wait',
  summary: 'wait until a lock is free (without keeping it)',
  usage: 'wait <name> [--timeout 30s] [--namespace ns] [--shared] [--url url]',
  positionals: ['<name>'],
  options: lockOptions,
  details: [
    "Takes the lock and releases it at once (one transaction), exiting 0 once it is free; pglock run keeps it. Without --timeout the wait has no limit but the server's lock_timeout.",
    'Exit codes: 0 free, 75 still busy at --timeout, 128+n stopped by signal n, 64 usage, 69 database unavailable.',
  ],
} as const satisfies CommandSpec;

/**
 * `pglock wait <name>`: blocks until the lock is free, by taking it and releasing it at once (in
 * one transaction), then exits 0. It does not keep the lock; use `pglock run` for that.
 */
export const waitCommand = defineCommand(waitSpec, async (args, io) => {
  const options = lockArgs(args);
  const target = connectionTarget(options.url, io.env);
  const pool = await openPool(target, { applicationName: 'pglock wait' });
  const stop = onStopSignals();
  try {
    await withLock(pool, options.name, async () => undefined, {
      namespace: options.namespace,
      timeoutMs: options.timeoutMs,
      shared: options.shared,
      signal: stop.signal,
    });
    return ExitCode.ok;
  } catch (error) {
    if (LockNotAcquiredError.is(error)) {
      throw new CliError(`${lockLabel(options)} ${busyText(options.timeoutMs)}.`, ExitCode.busy);
    }
    if (LockAbortedError.is(error)) return signalExitCode(String(stop.signal.reason));
    if (error instanceof CliError) throw error;
    throw connectionError(error, target);
  } finally {
    stop.dispose();
    await pool.end();
  }
});
