import { heldStatement } from './backend-statements.ts';
import type { Trace } from './diagnostics.ts';
import { LockLostError } from './errors.ts';
import { freshAnswer } from './fresh-answer.ts';
import type { LockKey } from './lock-key.ts';
import type { LockRequest } from './lock-options.ts';
import type { LockPort, PinnedConnection, PortConnection } from './lock-port.ts';
import { releaseStatements } from './lock-statements.ts';
import { describeKeys, queryFailed, sessionLostError } from './messages.ts';
import { currentContext, type LockContext } from './nesting.ts';
import { cell } from './row-cell.ts';
import { within } from './run-cancellable.ts';
import type { SessionLock } from './session-lock.ts';
import type { Statement } from './statement.ts';

// A held session lock: its heartbeat, its lost signal, its release.

/** A check from another connection may have to wait for the pool to open one. */
const MIN_CONTROL_CHECK_MS = 2_000;

/** A thrown value as an `Error` (the driver's own, or one wrapping what was thrown). */
export function asError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}

// Core-private (never exported from a package entry): the method is not part of the handle apps get.
// A dedicated session lock and a leader's term on a shared connection (hub-term.ts) both have it.
export const callbackContext: unique symbol = Symbol('pglock.sessionCallbackContext');

export class HeldSessionLock implements SessionLock {
  readonly keys: readonly LockKey[];
  readonly pid: number;
  readonly #port: LockPort<unknown, unknown>;
  readonly #db: unknown;
  readonly #pinned: PinnedConnection;
  readonly #request: LockRequest;
  readonly #trace: Trace;
  readonly #controller = new AbortController();
  readonly #timer: NodeJS.Timeout;
  readonly #check: Statement;
  /**
   * Where the check runs from another connection, the pinned one still gets a statement every beat:
   * a connection idle for longer than the server's idle_session_timeout (which docs/scheduling.md
   * recommends for a silent leader) is ended by the server, lock and all. It is the check again,
   * on the pinned backend, with the grant-time marker.
   */
  readonly #keepalive: Statement | undefined;
  readonly #checkTimeoutMs: number;
  #beating: Promise<void> | undefined;
  #closing: Promise<void> | undefined;
  #released: Promise<void> | undefined;
  #closed = false;

  constructor(
    port: LockPort<never, unknown>,
    db: unknown,
    pinned: PinnedConnection,
    request: LockRequest,
    trace: Trace,
    pid: number,
    since: string,
    heartbeatMs: number,
  ) {
    this.keys = request.keys;
    this.pid = pid;
    this.#port = port as unknown as LockPort<unknown, unknown>;
    this.#db = db;
    this.#pinned = pinned;
    this.#request = request;
    this.#trace = trace;
    const fromControl = pinned.heartbeatOn === 'control';
    this.#check = heldStatement(request, fromControl ? pid : undefined, fromControl ? undefined : since);
    this.#keepalive = fromControl ? heldStatement(request, undefined, since) : undefined;
    this.#checkTimeoutMs = fromControl ? Math.max(heartbeatMs, MIN_CONTROL_CHECK_MS) : heartbeatMs;
    this.#timer = setInterval(() => {
      this.#beating ??= this.#beat().finally(() => {
        this.#beating = undefined;
      });
    }, heartbeatMs);
    this.#timer.unref();
  }

  get key(): LockKey {
    return this.keys[0] as LockKey;
  }

  /** The lock context of a `withSessionLock` callback: what this session holds, on which database. */
  [callbackContext](): LockContext {
    return sessionCallbackContext(this.#db as object, this.#pinned, this.#request);
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

  /** How many of the keys the backend holds, asked where the port says (never a dead connection). */
  #holds(fresh = false): Promise<boolean> {
    const ask = () => this.#port.query(this.#db, this.#check);
    const run =
      this.#pinned.heartbeatOn === 'control'
        ? fresh
          ? freshAnswer(ask)
          : ask()
        : this.#pinned.query(this.#check);
    return run.then(([row]) => Number(cell(row ?? {}, 'held')) === this.keys.length);
  }

  async #beat(): Promise<void> {
    try {
      const holds = await within(
        this.#holds(),
        this.#checkTimeoutMs,
        `the connection did not answer a heartbeat within ${this.#checkTimeoutMs} ms`,
      );
      if (!holds) return this.lose(new Error(`backend ${this.pid} no longer holds it`), 'dead');
      // Written only once another connection has said that the pinned backend lives and holds the
      // lock (as a release is): a port checks from elsewhere because its driver must not write to a
      // connection that may have failed (postgres.js, porsager/postgres#1208).
      if (this.#keepalive === undefined || this.#released !== undefined || this.#controller.signal.aborted)
        return;
      const still = await within(
        this.#pinned.query(this.#keepalive),
        this.#checkTimeoutMs,
        `the connection did not answer a heartbeat within ${this.#checkTimeoutMs} ms`,
      );
      if (Number(cell(still[0] ?? {}, 'held')) !== this.keys.length) {
        this.lose(new Error(`backend ${this.pid} no longer holds it`), 'unknown');
      }
    } catch (error) {
      this.lose(error, 'unknown');
    }
  }

  /** Marks the lock lost (idempotent): `signal` aborts, the connection is ended without reuse. */
  lose(cause: unknown, state: 'unknown' | 'dead'): void {
    if (this.#controller.signal.aborted || this.#released !== undefined) return;
    clearInterval(this.#timer);
    this.#controller.abort(sessionLostError(this.#request, cause));
    this.#trace.lost(this.#controller.signal.reason);
    this.#closing = this.#close(state, asError(cause));
  }

  async #close(state: 'clean' | 'unknown' | 'dead', cause?: Error): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.resolve(this.#pinned.release(state, cause)).catch(() => undefined);
  }

  async #release(): Promise<void> {
    clearInterval(this.#timer);
    await this.#beating;
    if (this.#controller.signal.aborted) {
      await this.#closing;
      throw this.#controller.signal.reason;
    }
    // Where the port keeps statements off a connection that may have failed, ask elsewhere first.
    if (this.#pinned.heartbeatOn === 'control') {
      // Fresh: the unlock below is written on the strength of this answer (fresh-answer.ts).
      const holds = await this.#holds(true).catch(() => false);
      if (!holds) {
        const lost = new LockLostError(
          `The session ${describeKeys(this.#request)} was no longer held at release: its connection died.`,
          { keys: this.keys },
        );
        this.#trace.lost(lost);
        await this.#close('dead', lost);
        throw lost;
      }
    }
    let notHeld = 0;
    try {
      for (const stmt of releaseStatements(this.keys, this.#request.shared)) {
        const rows = await this.#pinned.query(stmt);
        notHeld += rows.filter((row) => cell(row, 'ok') !== true).length;
      }
    } catch (error) {
      await this.#close('unknown', asError(error));
      throw queryFailed(this.#request, 'release', 'releasing', error);
    }
    if (notHeld > 0) {
      const lost = new LockLostError(
        `The session ${describeKeys(this.#request)} was no longer held at release (${notHeld} not held): the connection lost it or is not the one that took it.`,
        { keys: this.keys },
      );
      this.#trace.lost(lost);
      await this.#close('unknown', lost);
      throw lost;
    }
    this.#trace.released();
    await this.#close('clean');
  }
}

/**
 * The lock context for a callback that runs under `handle` (`withSessionLock`'s, a leader's
 * `onElected`): it names what the session holds, so a lock call from there for one of those keys,
 * which would wait for this very session, is refused. `undefined` for a handle core did not make.
 */
export function sessionContext(handle: SessionLock, term?: object): LockContext | undefined {
  const make = (handle as Partial<Record<typeof callbackContext, () => LockContext>>)[callbackContext];
  if (typeof make !== 'function') return undefined;
  const context = make.call(handle);
  return term === undefined ? context : { ...context, term };
}

/**
 * The lock context of a callback run under a session lock on `connection` (a
 * `withSessionLock` callback, a leader's `onElected`): not a transaction to nest in, but what the
 * session holds on `db`, so a lock call there for one of those keys is refused.
 *
 * @example
 * ```ts
 * import { sessionCallbackContext } from './session-held.ts';
 *
 * const context = sessionCallbackContext(pool, pinned, request);
 * ```
 */
export function sessionCallbackContext(
  db: object,
  connection: PortConnection,
  request: LockRequest,
): LockContext {
  return {
    root: db,
    tx: undefined,
    connection,
    depth: 0,
    parent: currentContext(),
    nested: undefined,
    open: true,
    activity: 0,
    lost: undefined,
    request,
    verb: undefined,
    session: { keys: request.keys, shared: request.shared },
  };
}
