import { type ChildProcess, spawn } from 'node:child_process';
import { LockAbortedError, LockLostError, LockNotAcquiredError, LockUsageError } from '@pglock/core';
import { acquireSessionLock, type SessionLock } from '@pglock/pg';
import { connectionError, connectionTarget, openPool } from '../connection.ts';
import { CliError, ExitCode } from '../exit-codes.ts';
import { type CommandSpec, defineCommand } from '../parse-command.ts';
import { busyText, lockArgs, lockLabel, lockOptions } from './lock-args.ts';
import { signalExitCode } from './signals.ts';

const runSpec = {
  name: 'run',
  summary: 'run a command holding a session lock, released however it ends',
  usage: 'run <name> [--timeout 30s] [--namespace ns] [--shared] [--url url] -- <command> [args…]',
  positionals: ['<name>'],
  rest: 'a command',
  options: lockOptions,
  details: [
    "Runs the command without a shell (-- sh -c '…' for a pipeline), forwarding SIGINT, SIGTERM and SIGHUP. If the lock is lost, the command gets SIGTERM (SIGKILL 5 s later) and pglock exits 70. Without --timeout the wait has no limit but the server's lock_timeout.",
    "Exit codes: the command's own; 128+n if signal n killed it; 75 busy or timed out; 70 lock lost; 64 usage, or --url is a transaction-mode pooler (where a session lock cannot hold); 69 database unavailable; 126/127 command not executable / not found.",
  ],
} as const satisfies CommandSpec;
const FORWARDED: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
/** How long a command gets to exit after SIGTERM when the lock was lost, before SIGKILL. */
const KILL_GRACE_MS = 5_000;

/**
 * `pglock run <name> -- <command>`: takes a session lock (its own connection, checked by a
 * heartbeat), runs the command (no shell: `-- sh -c '…'` for one) and releases the lock however the
 * command ends. Exit code: the command's; 128+n when a signal n killed it; 75 when busy; 70 when
 * the lock was lost (the command is then sent SIGTERM, and SIGKILL after 5 s).
 */
export const runCommand = defineCommand(runSpec, async (args, io) => {
  const command = args.rest;
  const options = lockArgs(args);
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
      // A session lock cannot hold through a transaction-mode pooler: the URL is wrong for `run`.
      if (LockUsageError.is(error)) throw new CliError(error.message, ExitCode.usage, { cause: error });
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
});

function reasonText(reason: unknown): string {
  if (LockLostError.is(reason)) return `${reason.message}`;
  return `the lock was lost: ${reason instanceof Error ? reason.message : String(reason)}.`;
}
