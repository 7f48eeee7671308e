import {
  acquireSessionLocks,
  assertNotAborted,
  backendPidStatement,
  describeKeys,
  InvalidLockOptionsError,
  type LockExecutor,
  type LockKey,
  LockLostError,
  type LockOptions,
  type LockRequest,
  type LockTarget,
  lockRequest,
  lockTag,
  notAcquiredError,
  releaseSessionLocks,
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

/** A held session lock on its own pinned connection. `await using` releases it at the end of the block. */
export interface SessionLock extends AsyncDisposable {
  readonly keys: readonly LockKey[];
  readonly key: LockKey;
  /** Backend pid of the connection holding the lock. */
  readonly pid: number;
  /** Aborts with `LockLostError` as `reason` when the connection dies; stop the protected work then. */
  readonly signal: AbortSignal;
  /**
   * Releases the lock and hands the connection back to Kysely. Calling it again returns the first
   * call's promise. Rejects with `LockLostError` when the lock had been lost.
   */
  release(): Promise<void>;
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
  const handle = await acquireSessionLock(db, target, options);
  let result: T;
  try {
    result = await fn(handle.signal);
  } catch (error) {
    await handle.release().catch(() => undefined);
    throw error;
  }
  await handle.release();
  return result;
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
        let held: boolean;
        let pid = 0;
        try {
          held = await acquireSessionLocks(executor, request);
          if (held) pid = Number((await executor.query(backendPidStatement))[0]?.pid);
        } catch (error) {
          await executor.query(unlockAll).catch(() => undefined);
          throw error;
        }
        if (!held) {
          resolve(undefined);
          return;
        }
        const handle = new HeldSessionLock(executor, kyselyExecutor(db), request, pid, heartbeatMs);
        resolve(handle);
        await handle.closed;
      })
      .catch(reject);
  });
}

class HeldSessionLock implements SessionLock {
  readonly keys: readonly LockKey[];
  readonly pid: number;
  /** Settles when the pinned connection may go back to Kysely. */
  readonly closed: Promise<void>;
  readonly #pinned: LockExecutor;
  readonly #root: LockExecutor;
  readonly #request: LockRequest;
  readonly #controller = new AbortController();
  readonly #timer: NodeJS.Timeout;
  #close!: () => void;
  #heartbeat: Promise<void> | undefined;
  #released: Promise<void> | undefined;
  #closing: Promise<void> | undefined;

  constructor(
    pinned: LockExecutor,
    root: LockExecutor,
    request: LockRequest,
    pid: number,
    heartbeatMs: number,
  ) {
    this.keys = request.keys;
    this.pid = pid;
    this.#pinned = pinned;
    this.#root = root;
    this.#request = request;
    this.closed = new Promise((resolve) => {
      this.#close = resolve;
    });
    const check = heldStatement(request, pid);
    // The first check waits a full interval: a lock just taken needs no proof yet.
    this.#timer = setInterval(() => {
      this.#heartbeat ??= this.#beat(check, heartbeatMs).finally(() => {
        this.#heartbeat = undefined;
      });
    }, heartbeatMs);
    this.#timer.unref();
  }

  get key(): LockKey {
    return this.keys[0] as LockKey;
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  release(): Promise<void> {
    this.#released ??= this.#release();
    return this.#released;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }

  async #beat(check: Statement, heartbeatMs: number): Promise<void> {
    const timeoutMs = Math.max(heartbeatMs, MIN_CHECK_TIMEOUT_MS);
    try {
      const outcome = await within(this.#root.query(check), timeoutMs, 'timeout' as const);
      if (outcome === 'timeout') {
        // No answer: the lock may still be held, so clear it before Kysely gets the connection back.
        this.#lose(new Error(`the server did not answer a heartbeat within ${timeoutMs} ms`), true);
      } else if (Number(outcome[0]?.held) !== this.keys.length) {
        this.#lose(
          new Error(`backend ${this.pid} no longer holds it (terminated, or unlocked behind pglock)`),
        );
      }
    } catch (error) {
      this.#lose(error, true);
    }
  }

  #lose(cause: unknown, mayStillHold = false): void {
    if (this.#controller.signal.aborted || this.#released) return;
    clearInterval(this.#timer);
    this.#controller.abort(
      new LockLostError(
        `The session ${describeKeys(this.#request)} was lost: ${cause instanceof Error ? cause.message : String(cause)}.`,
        { keys: this.keys, cause },
      ),
    );
    // A backend that holds nothing (dead, or unlocked) gets no more statements: see heldStatement.
    this.#closing = mayStillHold ? this.#scrubAndClose() : Promise.resolve(this.#close());
  }

  // Hands the connection back holding no advisory lock (Kysely cannot destroy a connection).
  #scrubAndClose(): Promise<void> {
    // Bounded: a query on a dead connection may never settle (porsager/postgres#1208).
    this.#closing ??= within(this.#pinned.query(unlockAll), MIN_CHECK_TIMEOUT_MS, undefined)
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => this.#close());
    return this.#closing;
  }

  async #release(): Promise<void> {
    clearInterval(this.#timer);
    await this.#heartbeat;
    if (this.#controller.signal.aborted) {
      await this.#closing;
      throw this.#controller.signal.reason;
    }
    try {
      await releaseSessionLocks(this.#pinned, this.#request);
    } catch (error) {
      await this.#scrubAndClose();
      throw error;
    }
    this.#close();
  }
}
