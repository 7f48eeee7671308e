import { type ChildProcess, spawn } from 'node:child_process';
import { LockAbortedError, LockLostError, LockNotAcquiredError } from '@pglock/core';
import { acquireSessionLock, type SessionLock } from '@pglock/pg';
import { connectionError, connectionTarget, openPool } from '../connection.ts';
import { CliError, ExitCode } from '../exit-codes.ts';
import type { CommandIo } from './io.ts';
import { busyText, lockLabel, parseLockArgs } from './lock-args.ts';
import { signalExitCode } from './signals.ts';

const usage =
  'pglock run <name> [--timeout 30s] [--namespace ns] [--shared] [--url url] -- <command> [args…]';
const FORWARDED: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
/** How long a command gets to exit after SIGTERM when the lock was lost, before SIGKILL. */
const KILL_GRACE_MS = 5_000;

/**
 * `pglock run <name> -- <command>`: takes a session lock (its own connection, checked by a
 * heartbeat), runs the command (no shell: `-- sh -c '…'` for one) and releases the lock however the
 * command ends. Exit code: the command's; 128+n when a signal n killed it; 75 when busy; 70 when
 * the lock was lost (the command is then sent SIGTERM, and SIGKILL after 5 s).
 */
export async function runCommand(args: readonly string[], io: CommandIo): Promise<number> {
  const dash = args.indexOf('--');
  const command = dash === -1 ? [] : args.slice(dash + 1);
  if (command.length === 0) throw new CliError(`Usage: ${usage}`, ExitCode.usage);
  const options = parseLockArgs(args.slice(0, dash), usage);
  const label = lockLabel(options);
  const target = connectionTarget(options.url, io.env);
  const pool = await openPool(target, { max: 1, applicationName: 'pglock run' });

  // Until the command runs, a signal aborts the wait; afterwards it is forwarded to the command.
  const waiting = new AbortController();
  let child: ChildProcess | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (child) child.kill(signal);
    else waiting.abort(signal);
  };
  for (const signal of FORWARDED) process.on(signal, onSignal);
  try {
    let lock: SessionLock;
    try {
      lock = await acquireSessionLock(pool, options.name, {
        namespace: options.namespace,
        timeoutMs: options.timeoutMs,
        shared: options.shared,
        signal: waiting.signal,
      });
    } catch (error) {
      if (LockNotAcquiredError.is(error))
        throw new CliError(`${label} ${busyText(options.timeoutMs)}.`, ExitCode.busy);
      if (LockAbortedError.is(error)) return signalExitCode(String(waiting.signal.reason));
      throw connectionError(error, target);
    }

    // A signal that arrived after the grant but before the spawn found no command to forward to.
    if (waiting.signal.aborted) {
      await lock.release().catch(() => undefined);
      return signalExitCode(String(waiting.signal.reason));
    }
    const started = spawn(command[0] as string, command.slice(1), { stdio: 'inherit' });
    child = started;
    const ended = new Promise<number>((resolve) => {
      started.once('error', (error: NodeJS.ErrnoException) => {
        io.stderr.write(`pglock: cannot run ${command[0]}: ${error.message}\n`);
        resolve(error.code === 'ENOENT' ? ExitCode.notFound : ExitCode.notExecutable);
      });
      started.once('exit', (code, signal) => resolve(signal ? signalExitCode(signal) : (code ?? 0)));
    });
    let lost = false;
    let killTimer: NodeJS.Timeout | undefined;
    const onLost = () => {
      lost = true;
      io.stderr.write(`pglock: ${reasonText(lock.signal.reason)} Stopping the command.\n`);
      started.kill('SIGTERM');
      killTimer = setTimeout(() => started.kill('SIGKILL'), KILL_GRACE_MS);
    };
    if (lock.signal.aborted) onLost();
    else lock.signal.addEventListener('abort', onLost, { once: true });
    const code = await ended;
    clearTimeout(killTimer);
    if (lost) return ExitCode.lost;
    try {
      await lock.release();
    } catch (error) {
      // The command finished, but the lock was not held to the end: the caller must know.
      io.stderr.write(`pglock: ${reasonText(error)}\n`);
      return ExitCode.lost;
    }
    return code;
  } finally {
    for (const signal of FORWARDED) process.off(signal, onSignal);
    await pool.end().catch(() => undefined);
  }
}

function reasonText(reason: unknown): string {
  if (LockLostError.is(reason)) return `${reason.message}`;
  return `the lock was lost: ${reason instanceof Error ? reason.message : String(reason)}.`;
}
