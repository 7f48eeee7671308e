import {
  AdvisoryLockError,
  acquireSessionLocks,
  assertNotAborted,
  describeKeys,
  type LockKey,
  LockLostError,
  type LockOptions,
  type LockRequest,
  type LockTarget,
  LockTrace,
  lockRequest,
  notAcquiredError,
  releaseSessionLocks,
} from '@pglock/core';
import { pgExecutor } from './pg-executor.ts';
import type { PgPoolClientLike, PgPoolLike } from './pg-types.ts';

/** Options of session locks: core's, plus the liveness check of the held connection. */
export interface SessionLockOptions extends LockOptions {
  /**
   * How often (ms) the held connection is checked with `SELECT 1`, and how long that check may take
   * before the lock counts as lost. Default 1000. A terminated backend or a closed socket is noticed
   * at once; a silent network cut within about two intervals.
   */
  readonly heartbeatMs?: number | undefined;
}

/** A held session lock on its own pooled connection. `await using` releases it at the end of the block. */
export interface SessionLock extends AsyncDisposable {
  readonly keys: readonly LockKey[];
  readonly key: LockKey;
  /** Backend pid of the connection holding the lock. */
  readonly pid: number;
  /** Aborts with `LockLostError` as `reason` when the connection dies; stop the protected work then. */
  readonly signal: AbortSignal;
  /**
   * Releases the lock and returns the connection to the pool. Calling it again is a no-op that
   * returns the first call's promise. Rejects with `LockLostError` when the lock had been lost.
   */
  release(): Promise<void>;
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
  const handle = await acquireSessionLock(pool, target, options);
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

async function takeSessionLock(
  pool: PgPoolLike,
  request: LockRequest,
  heartbeatMs = 1_000,
): Promise<SessionLock | undefined> {
  if (!Number.isInteger(heartbeatMs) || heartbeatMs < 10) {
    throw new AdvisoryLockError('INVALID_LOCK_OPTIONS', 'heartbeatMs must be an integer of at least 10.');
  }
  assertNotAborted(request);
  const client = await pool.connect();
  const trace = new LockTrace(request, 'session');
  let held: boolean;
  let pid: number;
  try {
    held = await acquireSessionLocks(pgExecutor(client), request, trace);
    pid = held ? Number((await client.query('SELECT pg_backend_pid() AS pid')).rows[0]?.pid) : 0;
  } catch (error) {
    // The connection's lock state is unknown: never hand it back to the pool.
    client.release(error instanceof Error ? error : new Error(String(error)));
    throw error;
  }
  if (!held) {
    client.release();
    return undefined;
  }
  return new HeldSessionLock(client, request, trace, pid, heartbeatMs);
}

class HeldSessionLock implements SessionLock {
  readonly keys: readonly LockKey[];
  readonly pid: number;
  readonly #client: PgPoolClientLike;
  readonly #request: LockRequest;
  readonly #trace: LockTrace;
  readonly #controller = new AbortController();
  readonly #timer: NodeJS.Timeout;
  #heartbeat: Promise<void> | undefined;
  #released: Promise<void> | undefined;
  #destroyed = false;

  constructor(
    client: PgPoolClientLike,
    request: LockRequest,
    trace: LockTrace,
    pid: number,
    heartbeatMs: number,
  ) {
    this.keys = request.keys;
    this.pid = pid;
    this.#client = client;
    this.#request = request;
    this.#trace = trace;
    client.on('error', this.#onError);
    client.on('end', this.#onEnd);
    this.#timer = setInterval(() => {
      this.#heartbeat ??= this.#beat(heartbeatMs).finally(() => {
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

  async #beat(heartbeatMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const silent = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), heartbeatMs);
    });
    try {
      const outcome = await Promise.race([this.#client.query('SELECT 1'), silent]);
      if (outcome === 'timeout')
        this.#lose(new Error(`the connection did not answer a heartbeat within ${heartbeatMs} ms`));
    } catch (error) {
      this.#lose(error);
    } finally {
      clearTimeout(timer);
    }
  }

  readonly #onError = (error: Error): void => this.#lose(error);
  readonly #onEnd = (): void => this.#lose(new Error('the connection ended'));

  #lose(cause: unknown): void {
    if (this.#controller.signal.aborted || this.#released) return;
    clearInterval(this.#timer);
    this.#controller.abort(
      new LockLostError(
        `The session ${describeKeys(this.#request)} was lost: ${cause instanceof Error ? cause.message : String(cause)}.`,
        {
          keys: this.keys,
          cause,
        },
      ),
    );
    this.#trace.lost(this.#controller.signal.reason);
    this.#destroy(cause);
  }

  #destroy(cause: unknown): void {
    if (this.#destroyed) return;
    this.#destroyed = true;
    this.#client.removeListener('error', this.#onError);
    this.#client.removeListener('end', this.#onEnd);
    // A closed connection ends its session, and PostgreSQL releases its locks with it.
    this.#client.release(cause instanceof Error ? cause : new Error(String(cause)));
  }

  async #release(): Promise<void> {
    clearInterval(this.#timer);
    await this.#heartbeat;
    if (this.#controller.signal.aborted) throw this.#controller.signal.reason;
    try {
      await releaseSessionLocks(pgExecutor(this.#client), this.#request, this.#trace);
    } catch (error) {
      this.#destroy(error);
      throw error;
    }
    this.#destroyed = true;
    this.#client.removeListener('error', this.#onError);
    this.#client.removeListener('end', this.#onEnd);
    this.#client.release();
  }
}
