import {
  describeKeys,
  holdsLock,
  type LockKey,
  LockLostError,
  type LockRequest,
  type LockTrace,
  releaseSessionLocks,
} from '@pglock/core';
import { pgExecutor } from './pg-executor.ts';
import type { PgPoolClientLike } from './pg-types.ts';
import type { SessionLock } from './session-lock.ts';

/**
 * A session lock held on one checked-out client. The heartbeat asks the server whether *this
 * connection's backend* still holds the lock (not just whether the socket answers), so a backend
 * swapped underneath by a pooler counts as a loss too.
 */
export class HeldSessionLock implements SessionLock {
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
      const outcome = await Promise.race([holdsLock(pgExecutor(this.#client), this.key), silent]);
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
