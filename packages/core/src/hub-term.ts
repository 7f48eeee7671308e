import type { Trace } from './diagnostics.ts';
import type { HubConnection } from './hub-connection.ts';
import type { BigintLockKey, LockKey } from './lock-key.ts';
import type { LockRequest } from './lock-options.ts';
import { sessionLostError } from './messages.ts';
import type { LockContext } from './nesting.ts';
import { callbackContext, sessionCallbackContext } from './session-held.ts';
import type { SessionLock } from './session-lock.ts';

/** What a term asks of the hub that granted it. */
export interface TermOwner {
  /** Unlocks the term's key on its connection; rejects with LockLostError when it was not held. */
  releaseTerm(term: HubTerm): Promise<void>;
}

/**
 * A leader's lock held on a connection its hub shares with other leaders of the process: the same
 * handle as a dedicated session lock (`signal`, `pid`, `release()`), kept alive by the hub's one
 * heartbeat and lost when that connection is.
 *
 * @example
 * ```ts
 * import type { HubTerm } from './hub-term.ts';
 *
 * declare const term: HubTerm;
 * term.signal.addEventListener('abort', () => console.log('lost', term.signal.reason));
 * await term.release();
 * ```
 */
export class HubTerm implements SessionLock {
  readonly keys: readonly LockKey[];
  readonly key: BigintLockKey;
  /** The shared connection's backend pid. */
  readonly pid: number;
  readonly connection: HubConnection;
  /** When the server granted it (server milliseconds, digits only): the held-for marker. */
  readonly since: string;
  /** The term number its election wrote (0 until then). */
  term = 0;
  readonly #owner: TermOwner;
  readonly #db: object;
  readonly #request: LockRequest;
  readonly #trace: Trace;
  readonly #controller = new AbortController();
  #released: Promise<void> | undefined;

  constructor(
    owner: TermOwner,
    db: object,
    connection: HubConnection,
    request: LockRequest,
    trace: Trace,
    since: string,
  ) {
    this.#owner = owner;
    this.#db = db;
    this.connection = connection;
    this.#request = request;
    this.keys = request.keys;
    this.key = request.keys[0] as BigintLockKey;
    this.pid = connection.pid;
    this.#trace = trace;
    this.since = since;
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** The request it was granted for (messages). */
  get request(): LockRequest {
    return this.#request;
  }

  get trace(): Trace {
    return this.#trace;
  }

  /** True once `release()` was called (the hub no longer counts it as held by this process). */
  get releasing(): boolean {
    return this.#released !== undefined;
  }

  /** The lock context of the term's callback: what its session holds, on which database. */
  [callbackContext](): LockContext {
    return sessionCallbackContext(this.#db, this.connection.connection, this.#request);
  }

  /** Marks it lost (idempotent): `signal` aborts with LockLostError. */
  lose(cause: unknown): void {
    if (this.#controller.signal.aborted || this.#released !== undefined) return;
    this.#controller.abort(sessionLostError(this.#request, cause));
    this.#trace.lost(this.#controller.signal.reason);
  }

  release(): Promise<void> {
    this.#released ??= this.#owner.releaseTerm(this);
    return this.#released;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }
}
