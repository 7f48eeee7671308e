import {
  acquireSessionLocks,
  assertNotAborted,
  InvalidLockOptionsError,
  type LockOptions,
  type LockRequest,
  type LockTarget,
  LockTrace,
  lockRequest,
  notAcquiredError,
  runWithSessionLock,
  type SessionLock,
} from '@pglock/core';
import { holdOnClient } from './held-session-lock.ts';
import { pgExecutor } from './pg-executor.ts';
import type { PgPoolLike } from './pg-types.ts';
import { assertStableBackend } from './stable-backend.ts';

/** Options of session locks: core's, plus the liveness check of the held connection. */
export interface SessionLockOptions extends LockOptions {
  /**
   * How often (ms) the held connection is checked with `SELECT 1`, and how long that check may take
   * before the lock counts as lost. Default 1000. A terminated backend or a closed socket is noticed
   * at once; a silent network cut within about two intervals.
   */
  readonly heartbeatMs?: number | undefined;
}

/**
 * Takes a session-scoped lock on a dedicated connection checked out of `pool`, and keeps it until
 * `release()` (or the connection's death, reported through `signal`). For leader election and work
 * longer than a transaction should stay open. Throws `LockNotAcquiredError` when not acquired
 * within `timeoutMs`.
 *
 * @example
 * ```ts
 * import { acquireSessionLock } from '@pglock/pg';
 *
 * await using leader = await acquireSessionLock(pool, 'scheduler-leader');
 * while (!leader.signal.aborted) await runSchedulerTick();
 * ```
 */
export async function acquireSessionLock(
  pool: PgPoolLike,
  target: LockTarget,
  options: SessionLockOptions = {},
): Promise<SessionLock> {
  const request = lockRequest(target, options);
  const handle = await takeSessionLock(pool, request, options.heartbeatMs);
  if (!handle) throw notAcquiredError(request);
  return handle;
}

/**
 * Like {@link acquireSessionLock}, but resolves `undefined` when the lock is taken elsewhere.
 * `timeoutMs` defaults to 0 (one try): the usual shape of leader election.
 *
 * @example
 * ```ts
 * import { tryAcquireSessionLock } from '@pglock/pg';
 *
 * const leader = await tryAcquireSessionLock(pool, 'scheduler-leader');
 * if (leader) startScheduling(leader.signal);
 * ```
 */
export async function tryAcquireSessionLock(
  pool: PgPoolLike,
  target: LockTarget,
  options: SessionLockOptions = {},
): Promise<SessionLock | undefined> {
  return takeSessionLock(pool, lockRequest(target, options, { timeoutMs: 0 }), options.heartbeatMs);
}

/**
 * Runs `fn` while holding a session lock, and releases it after. `fn` receives the lock's
 * `signal`, which aborts with `LockLostError` if the connection dies meanwhile. When `fn` throws,
 * its error reaches the caller, never a release failure behind it.
 *
 * @example
 * ```ts
 * import { withSessionLock } from '@pglock/pg';
 *
 * await withSessionLock(pool, 'reindex', async (signal) => {
 *   for (const table of tables) {
 *     signal.throwIfAborted();
 *     await reindex(table);
 *   }
 * });
 * ```
 */
export async function withSessionLock<T>(
  pool: PgPoolLike,
  target: LockTarget,
  fn: (signal: AbortSignal) => Promise<T>,
  options: SessionLockOptions = {},
): Promise<T> {
  return runWithSessionLock(await acquireSessionLock(pool, target, options), fn);
}

async function takeSessionLock(
  pool: PgPoolLike,
  request: LockRequest,
  heartbeatMs = 1_000,
): Promise<SessionLock | undefined> {
  if (!Number.isInteger(heartbeatMs) || heartbeatMs < 10) {
    throw new InvalidLockOptionsError('heartbeatMs must be an integer of at least 10.');
  }
  assertNotAborted(request);
  const client = await pool.connect();
  const trace = new LockTrace(request, 'session');
  let held: boolean;
  let pid: number;
  try {
    held = await acquireSessionLocks(pgExecutor(client), request, trace);
    pid = held ? Number((await client.query('SELECT pg_backend_pid() AS pid')).rows[0]?.pid) : 0;
    if (held) await assertStableBackend(pool, client, pid, request);
  } catch (error) {
    // The connection's lock state is unknown: never hand it back to the pool.
    client.release(error instanceof Error ? error : new Error(String(error)));
    throw error;
  }
  if (!held) {
    client.release();
    return undefined;
  }
  return holdOnClient(client, request, trace, pid, heartbeatMs);
}
