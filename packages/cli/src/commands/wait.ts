import { LockAbortedError, LockNotAcquiredError } from '@pglock/core';
import { withLock } from '@pglock/pg';
import { connectionError, connectionTarget, openPool } from '../connection.ts';
import { CliError, ExitCode } from '../exit-codes.ts';
import type { CommandIo } from './io.ts';
import { onStopSignals } from './io.ts';
import { busyText, lockLabel, parseLockArgs } from './lock-args.ts';
import { signalExitCode } from './signals.ts';

const usage = 'pglock wait <name> [--timeout 30s] [--namespace ns] [--shared] [--url url]';

/**
 * `pglock wait <name>`: blocks until the lock is free, by taking it and releasing it at once (in
 * one transaction), then exits 0. It does not keep the lock; use `pglock run` for that.
 */
export async function waitCommand(args: readonly string[], io: CommandIo): Promise<number> {
  const options = parseLockArgs(args, usage);
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
}
