import {
  acquireSessionLocks,
  assertNotAborted,
  backendPidStatement,
  holdSessionLock,
  InvalidLockOptionsError,
  type LockExecutor,
  type LockOptions,
  type LockRequest,
  type LockTarget,
  LockTrace,
  lockRequest,
  lockTag,
  notAcquiredError,
  runWithSessionLock,
  type SessionLock,
  type Statement,
  statement,
} from '@pglock/core';
import type { Kysely } from 'kysely';
import { kyselyExecutor } from './kysely-executor.ts';
import { assertNotTransaction } from './transaction-driver.ts';

/** Options of session locks: core's, plus the liveness check of the pinned connection. */
export interface SessionLockOptions extends LockOptions {
  /**
   * How often (ms) `pg_locks` is checked, from another connection of `db`, for the lock still held
   * by the pinned backend. Default 1000. A terminated backend is noticed at the next check; a check
   * that gets no answer within `max(heartbeatMs, 2000)` (the pool may have to open a connection
   * for it) counts the lock as lost too.
   */
  readonly heartbeatMs?: number | undefined;
}

/**
 * How many of `keys` the backend `pid` holds, in the mode they were taken. Run from another
 * connection: a query on a dead pinned postgres.js connection throws from a timer and ends the
 * process (porsager/postgres#1208), and one reconnected behind the scenes would answer from a
 * new session that holds nothing.
 */
function heldStatement(request: LockRequest, pid: number): Statement {
  const values: string[] = [];
  const rows = request.keys.map((key) => {
    const { classid, objid, objsubid } = lockTag(key);
    values.push(String(classid), String(objid), String(objsubid));
    const n = values.length;
    return `($${n - 2}::text::bigint, $${n - 1}::text::bigint, $${n}::text::int)`;
  });
  values.push(String(pid));
  const mode = request.shared ? 'ShareLock' : 'ExclusiveLock';
  return statement(
    `SELECT count(*)::int AS held FROM pg_locks AS l JOIN (VALUES ${rows.join(', ')}) AS k(c, o, s)
       ON l.classid = k.c::oid AND l.objid = k.o::oid AND l.objsubid = k.s
     WHERE l.locktype = 'advisory' AND l.granted AND l.pid = $${values.length}::text::int AND l.mode = '${mode}'
       AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    values,
  );
}
// Kysely has no way to destroy a connection, so one whose lock state is unknown (a failed
// acquisition, a lost heartbeat that turns out to be alive) is left holding no advisory lock
// before Kysely returns it to its pool. The connection was pinned for this lock alone.
const unlockAll = statement('SELECT pg_advisory_unlock_all()');
const MIN_CHECK_TIMEOUT_MS = 2_000;

/** `promise`, or `fallback` once `ms` have passed without it settling. */
async function within<T, F>(promise: Promise<T>, ms: number, fallback: F): Promise<T | F> {
  promise.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<F>((resolve) => {
    timer = setTimeout(() => resolve(fallback), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Takes a session-scoped lock on a connection pinned with `db.connection()`, and keeps that
 * connection until `release()` (or its death, reported through `signal`). For leader election and
 * work longer than a transaction should stay open. Throws `LockNotAcquiredError` when not acquired
 * within `timeoutMs`.
 *
 * @example
 * ```ts
 * import { acquireSessionLock } from '@pglock/kysely';
 *
 * await using leader = await acquireSessionLock(db, 'scheduler-leader');
 * while (!leader.signal.aborted) await runSchedulerTick(db);
 * ```
 */
export async function acquireSessionLock<DB>(
  db: Kysely<DB>,
  target: LockTarget,
  options: SessionLockOptions = {},
): Promise<SessionLock> {
  const request = lockRequest(target, options);
  const handle = await takeSessionLock(db, request, options.heartbeatMs);
  if (!handle) throw notAcquiredError(request);
  return handle;
}

/**
 * Like {@link acquireSessionLock}, but resolves `undefined` when the lock is taken elsewhere.
 * `timeoutMs` defaults to 0 (one try): the usual shape of leader election.
 *
 * @example
 * ```ts
 * import { tryAcquireSessionLock } from '@pglock/kysely';
 *
 * const leader = await tryAcquireSessionLock(db, 'scheduler-leader');
 * if (leader) startScheduling(leader.signal);
 * ```
 */
export async function tryAcquireSessionLock<DB>(
  db: Kysely<DB>,
  target: LockTarget,
  options: SessionLockOptions = {},
): Promise<SessionLock | undefined> {
  return takeSessionLock(db, lockRequest(target, options, { timeoutMs: 0 }), options.heartbeatMs);
}

/**
 * Runs `fn` while holding a session lock on a pinned connection (`db.connection().execute(…)`),
 * and releases it after. `fn` receives the lock's `signal`, which aborts with `LockLostError` if
 * the connection dies meanwhile. When `fn` throws, its error reaches the caller, never a release
 * failure behind it. Run your queries on `db` as usual: the pinned connection is the lock's alone.
 *
 * @example
 * ```ts
 * import { withSessionLock } from '@pglock/kysely';
 *
 * await withSessionLock(db, 'reindex', async (signal) => {
 *   for (const table of tables) {
 *     signal.throwIfAborted();
 *     await reindex(db, table);
 *   }
 * });
 * ```
 */
export async function withSessionLock<DB, T>(
  db: Kysely<DB>,
  target: LockTarget,
  fn: (signal: AbortSignal) => Promise<T>,
  options: SessionLockOptions = {},
): Promise<T> {
  return runWithSessionLock(await acquireSessionLock(db, target, options), fn);
}

async function takeSessionLock<DB>(
  db: Kysely<DB>,
  request: LockRequest,
  heartbeatMs = 1_000,
): Promise<SessionLock | undefined> {
  if (!Number.isInteger(heartbeatMs) || heartbeatMs < 10) {
    throw new InvalidLockOptionsError('heartbeatMs must be an integer of at least 10.');
  }
  assertNotAborted(request);
  assertNotTransaction(db, 'A session lock');
  return new Promise((resolve, reject) => {
    // The callback stays open while the lock is held: returning from it hands the connection back.
    db.connection()
      .execute(async (connection) => {
        const executor = kyselyExecutor(connection, db);
        const trace = new LockTrace(request, 'session');
        let held: boolean;
        let pid = 0;
        try {
          held = await acquireSessionLocks(executor, request, trace);
          if (held) pid = Number((await executor.query(backendPidStatement))[0]?.pid);
        } catch (error) {
          await executor.query(unlockAll).catch(() => undefined);
          throw error;
        }
        if (!held) {
          resolve(undefined);
          return;
        }
        const { handle, closed } = holdOnConnection(
          executor,
          kyselyExecutor(db),
          request,
          trace,
          pid,
          heartbeatMs,
        );
        resolve(handle);
        await closed;
      })
      .catch(reject);
  });
}

/**
 * core's session-lock handle over a connection pinned by `db.connection()`. The heartbeat checks
 * from another connection of `db` (see heldStatement); `closed` settles when the pinned
 * connection may go back to Kysely, which cannot destroy a connection: one whose lock state is
 * unknown is first cleared with a bounded `pg_advisory_unlock_all()`, and one whose backend is
 * known to hold nothing (dead) gets no statement at all.
 */
function holdOnConnection(
  pinned: LockExecutor,
  root: LockExecutor,
  request: LockRequest,
  trace: LockTrace,
  pid: number,
  heartbeatMs: number,
): { handle: SessionLock; closed: Promise<void> } {
  let handBack!: () => void;
  const closed = new Promise<void>((resolve) => {
    handBack = resolve;
  });
  const check = heldStatement(request, pid);
  const handle = holdSessionLock(
    {
      executor: pinned,
      check: async () => Number((await root.query(check))[0]?.held) === request.keys.length,
      async close(cause, lockState) {
        // Bounded: a query on a dead connection may never settle (porsager/postgres#1208).
        if (cause !== undefined && lockState !== 'not-held') {
          await within(pinned.query(unlockAll), MIN_CHECK_TIMEOUT_MS, undefined).catch(() => undefined);
        }
        handBack();
      },
    },
    request,
    trace,
    pid,
    // The pool may have to open a connection for a check, which postgres.js does slowly.
    { intervalMs: heartbeatMs, timeoutMs: Math.max(heartbeatMs, MIN_CHECK_TIMEOUT_MS) },
  );
  return { handle, closed };
}
