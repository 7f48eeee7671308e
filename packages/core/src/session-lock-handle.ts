import { describeKeys } from './acquire-locks.ts';
import type { LockTrace } from './diagnostics.ts';
import { LockLostError } from './errors.ts';
import type { LockExecutor } from './lock-executor.ts';
import type { LockKey } from './lock-key.ts';
import type { LockRequest } from './lock-options.ts';
import { releaseSessionLocks } from './session-locks.ts';

/**
 * A held session lock on its own pinned connection. `await using` releases it at the end of the
 * block.
 */
export interface SessionLock extends AsyncDisposable {
  readonly keys: readonly LockKey[];
  /** The first (or only) key. */
  readonly key: LockKey;
  /** Backend pid of the connection holding the lock. */
  readonly pid: number;
  /** Aborts with `LockLostError` as `reason` when the lock is lost; stop the protected work then. */
  readonly signal: AbortSignal;
  /**
   * Releases the lock and hands the connection back. Calling it again returns the first call's
   * promise (a no-op). Rejects with `LockLostError` when the lock had been lost.
   */
  release(): Promise<void>;
}

/** What an adapter provides for one pinned connection that holds a session lock. */
export interface PinnedSession {
  /** Runs statements on the pinned connection (the release runs here). */
  readonly executor: LockExecutor;
  /**
   * The heartbeat: resolves whether the lock is still held by the pinned backend. Resolving `false`,
   * rejecting, or not settling within the check timeout counts as lost.
   */
  check(): Promise<boolean>;
  /**
   * Hands the connection back after a clean release, or (`cause` given) makes sure it cannot go on
   * holding anything: destroy it, or unlock everything on it before a pool reuses it. `lockState`
   * says what is known: `not-held` when the heartbeat saw the backend no longer holding the lock
   * (a dead connection: send it nothing more), `unknown` otherwise.
   */
  close(cause?: Error, lockState?: 'not-held' | 'unknown'): void | Promise<void>;
  /** Reports the connection's death as it happens (socket closed, backend terminated); returns the unsubscribe. */
  watch?(onDeath: (cause: unknown) => void): () => void;
}

/** Timing of the heartbeat. */
export interface HeartbeatOptions {
  /** How often `check()` runs (ms). */
  readonly intervalMs: number;
  /** How long one check may take before the lock counts as lost (ms). */
  readonly timeoutMs: number;
}

/**
 * Turns a pinned connection that holds `request`'s session locks into a {@link SessionLock}: a
 * heartbeat, a `signal` that aborts with `LockLostError` on loss (then the connection is closed with
 * the cause), and an idempotent `release()`.
 *
 * @example
 * ```ts
 * import { holdSessionLock, holdsLock, LockTrace, lockRequest } from '@pglock/core';
 *
 * const request = lockRequest('leader');
 * const handle = holdSessionLock(
 *   { executor, check: () => holdsLock(executor, request.keys[0]!), close: (cause) => client.release(cause) },
 *   request,
 *   new LockTrace(request, 'session'),
 *   pid,
 *   { intervalMs: 1_000, timeoutMs: 1_000 },
 * );
 * ```
 */
export function holdSessionLock(
  session: PinnedSession,
  request: LockRequest,
  trace: LockTrace,
  pid: number,
  heartbeat: HeartbeatOptions,
): SessionLock {
  return new HeldSessionLock(session, request, trace, pid, heartbeat);
}

class HeldSessionLock implements SessionLock {
  readonly keys: readonly LockKey[];
  readonly pid: number;
  readonly #session: PinnedSession;
  readonly #request: LockRequest;
  readonly #trace: LockTrace;
  readonly #controller = new AbortController();
  readonly #timer: NodeJS.Timeout;
  readonly #unwatch: () => void;
  #beating: Promise<void> | undefined;
  #closing: Promise<void> | undefined;
  #released: Promise<void> | undefined;
  #closed = false;

  constructor(
    session: PinnedSession,
    request: LockRequest,
    trace: LockTrace,
    pid: number,
    heartbeat: HeartbeatOptions,
  ) {
    this.keys = request.keys;
    this.pid = pid;
    this.#session = session;
    this.#request = request;
    this.#trace = trace;
    this.#unwatch = session.watch?.((cause) => this.#lose(cause)) ?? (() => undefined);
    this.#timer = setInterval(() => {
      this.#beating ??= this.#beat(heartbeat.timeoutMs).finally(() => {
        this.#beating = undefined;
      });
    }, heartbeat.intervalMs);
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

  async #beat(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const silent = new Promise<'silent'>((resolve) => {
      timer = setTimeout(() => resolve('silent'), timeoutMs);
    });
    const checking = this.#session.check();
    checking.catch(() => undefined); // a check that fails after the timeout won has nothing left to say
    try {
      const outcome = await Promise.race([checking, silent]);
      if (outcome === 'silent')
        this.#lose(new Error(`the connection did not answer a heartbeat within ${timeoutMs} ms`));
      else if (!outcome) this.#lose(new Error(`backend ${this.pid} no longer holds it`), 'not-held');
    } catch (error) {
      this.#lose(error);
    } finally {
      clearTimeout(timer);
    }
  }

  #lose(cause: unknown, lockState: 'not-held' | 'unknown' = 'unknown'): void {
    if (this.#controller.signal.aborted || this.#released) return;
    clearInterval(this.#timer);
    const detail = cause instanceof Error ? cause.message : String(cause);
    this.#controller.abort(
      new LockLostError(`The session ${describeKeys(this.#request)} was lost: ${detail}.`, {
        keys: this.keys,
        cause,
      }),
    );
    this.#trace.lost(this.#controller.signal.reason);
    this.#closing = this.#close(cause instanceof Error ? cause : new Error(detail), lockState);
  }

  async #close(cause?: Error, lockState?: 'not-held' | 'unknown'): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#unwatch();
    await this.#session.close(cause, cause === undefined ? undefined : (lockState ?? 'unknown'));
  }

  async #release(): Promise<void> {
    clearInterval(this.#timer);
    await this.#beating;
    if (this.#controller.signal.aborted) {
      await this.#closing?.catch(() => undefined);
      throw this.#controller.signal.reason;
    }
    try {
      await releaseSessionLocks(this.#session.executor, this.#request, this.#trace);
    } catch (error) {
      await this.#close(error instanceof Error ? error : new Error(String(error)));
      throw error;
    }
    await this.#close();
  }
}

/**
 * Runs `fn` with a held session lock's `signal`, then releases the lock. When `fn` throws, its error
 * reaches the caller, never a release failure behind it (the connection is closed either way); when
 * `fn` resolves, a failed release rejects (the protection may have been gone).
 *
 * @example
 * ```ts
 * import { runWithSessionLock } from '@pglock/core';
 *
 * const report = await runWithSessionLock(handle, async (signal) => buildReport(signal));
 * ```
 */
export async function runWithSessionLock<T>(
  handle: SessionLock,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
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
