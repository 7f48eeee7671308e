import { type Acquisition, acquire, isConnectionFailure, waitUnlimited } from './acquire.ts';
import { assertCancellable, cancellerFor } from './cancel-wait.ts';
import { startTrace, type Trace } from './diagnostics.ts';
import { LockLostError, LockUsageError } from './errors.ts';
import { lockTag } from './inspect-locks.ts';
import type { LockKey } from './lock-key.ts';
import {
  checkDuration,
  type LockOptions,
  type LockRequest,
  type LockTarget,
  lockRequest,
} from './lock-options.ts';
import type { ControlConnection, LockPort, PinnedConnection, PortConnection } from './lock-port.ts';
import { backendPidStatement, releaseStatements, sessionUnlockStatements } from './lock-statements.ts';
import { abortedError, describeKeys, heldBySessionError, notAcquiredError, queryFailed } from './messages.ts';
import { contextFor, currentContext, heldBySession, type LockContext, runInContext } from './nesting.ts';
import { SESSION_LOCK_OPTION_KEYS } from './option-keys.ts';
import { cell } from './row-cell.ts';
import { within } from './run-cancellable.ts';
import { startBound } from './start-bound.ts';
import { type Statement, statementText } from './statement.ts';

/**
 * Options of session locks: core's, plus the liveness check of the pinned connection.
 *
 * @example
 * ```ts
 * import type { SessionLockOptions } from '@pglock/core';
 *
 * const options: SessionLockOptions = { timeoutMs: 0, heartbeatMs: 500 };
 * ```
 */
export interface SessionLockOptions extends LockOptions {
  /**
   * How often (ms) the server is asked whether this connection's backend still holds the lock (in
   * `pg_locks`), and how long one check may take before the lock counts as lost. Default 1000, from
   * 10 to 2^31-1. A terminated backend or a closed socket is noticed at once; a silent network cut
   * within about two intervals.
   */
  readonly heartbeatMs?: number | undefined;
}

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

/** What the session verbs of one factory share. */
export interface SessionScope<Db> {
  readonly port: LockPort<Db, unknown>;
  readonly db: Db;
  readonly defaults: SessionLockOptions;
}

/** What a leader's campaign asks of its session lock (see {@link takeSessionLock}). */
export interface Campaigning {
  /** Runs on the pinned connection once the lock is held (the term is written there). */
  onHeld(connection: PortConnection): Promise<void>;
}

const DEFAULT_HEARTBEAT_MS = 1_000;
/** A check from another connection may have to wait for the pool to open one. */
const MIN_CONTROL_CHECK_MS = 2_000;
const PROBE_TIMEOUT_MS = 2_000;
/** Looks of the pooler check (two round trips each, only through a pooler). */
const PROBE_ROUNDS = 8;

const identify = statementText(
  'SELECT pg_backend_pid() AS pid, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint::text AS since',
).bind([]);

/**
 * Takes a session lock on a connection pinned for it: `undefined` when a try found it taken (or a
 * bounded wait elapsed and `attempt` is set), else the handle. Refuses, with `LockUsageError`, a
 * connection whose statements may run on changing server backends (a transaction-mode pooler), and
 * also when it could not check. `campaign` makes it a leader's campaign: its wait is not ended by the
 * session's statement_timeout or lock_timeout, nor by a cancel it did not ask for; and
 * `campaign.onHeld` runs on the pinned connection once the lock is held and checked, before the
 * handle exists (`leader` writes its term there); when it throws, the connection is closed, which
 * releases the lock, and its error is thrown.
 */
export async function takeSessionLock<Db>(
  scope: SessionScope<Db>,
  target: LockTarget,
  options: SessionLockOptions | undefined,
  attempt: boolean,
  verb: string,
  campaign?: Campaigning,
): Promise<SessionLock | undefined> {
  const { port, db, defaults } = scope;
  const request = lockRequest(
    target,
    options,
    attempt ? { ...defaults, timeoutMs: 0 } : defaults,
    verb,
    SESSION_LOCK_OPTION_KEYS,
  );
  const heartbeatMs = checkDuration(
    options?.heartbeatMs ?? defaults.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
    'heartbeatMs',
    verb,
    10,
  );
  const pin = port.pin?.bind(port);
  if (pin === undefined) throw new LockUsageError(`${verb}: ${port.name} offers no session locks.`);
  const selfHeld = heldBySession(db, request.keys, request.shared);
  if (selfHeld !== undefined) throw heldBySessionError(request, verb, selfHeld);
  if (contextFor(db) !== undefined || port.connectionOf(db) !== undefined) {
    throw new LockUsageError(
      `${verb}: a session lock pins a connection of its own, and was given a transaction. Pass the database (pool) itself, or use lock(tx, …) for a lock that lasts until the transaction ends.`,
      { keys: request.keys },
    );
  }
  assertCancellable(port, db, request, verb);
  if (request.signal?.aborted) throw abortedError(request, verb, request.signal.reason);
  const deadline =
    request.timeoutMs === undefined || request.timeoutMs === 0
      ? undefined
      : performance.now() + request.timeoutMs;

  let died: unknown;
  let holder: HeldSessionLock | undefined;
  const pinning = pin(db, (cause) => {
    died ??= cause ?? new Error('the connection ended');
    holder?.lose(died, 'dead');
  });
  // The pool's wait for a connection comes out of the lock's budget, and the signal ends it, as the
  // start of withLock's transaction does: an exhausted pool must not keep the caller past either
  // (nor keep a campaign from stopping). A connection that arrives after the caller gave up holds
  // nothing of this call: it goes straight back.
  const bound =
    deadline === undefined && request.signal === undefined
      ? undefined
      : startBound(
          deadline,
          request.signal,
          () => NOT_IN_TIME,
          () => abortedError(request, verb, request.signal?.reason),
        );
  let pinned: PinnedConnection;
  try {
    pinned = bound === undefined ? await pinning : await bound.wait(pinning, handBack);
  } catch (error) {
    if (error !== NOT_IN_TIME) throw error;
    if (attempt) return undefined;
    throw notAcquiredError(request, verb);
  }
  // The backend is checked before the lock is taken (issue 12 A1, found by the kit's "two
  // instances trying at once" test): through a transaction-mode pooler the unlock of a lock refused
  // after it was taken can land on another server backend, leaving the lock held on a pooled server
  // connection that no client owns.
  let pid: number;
  try {
    const [row] = await pinned.query(backendPidStatement);
    pid = Number(cell(row ?? {}, 'pid'));
    if (!Number.isInteger(pid)) throw new Error('pg_backend_pid() gave no pid');
    await assertStableBackend(port, db, pinned, pid, request, verb, false);
  } catch (error) {
    if (LockUsageError.is(error)) throw error;
    await pinned.release(died !== undefined ? 'dead' : 'unknown', asError(error));
    throw queryFailed(request, verb, 'checking', error);
  }
  const trace = startTrace(request, 'session');
  let held: boolean;
  try {
    const cancel = await cancellerFor(port, db, pinned, request);
    const acquisition: Acquisition = {
      connection: pinned,
      request,
      scope: 'session',
      deadline,
      ownsTransaction: false,
      cancel,
      verb,
      trace,
    };
    held = campaign === undefined ? await acquire(acquisition) : await waitUnlimited(acquisition);
  } catch (error) {
    await pinned.release(
      died !== undefined || isConnectionFailure(error) ? 'dead' : 'unknown',
      asError(error),
    );
    throw error;
  }
  if (!held) {
    await pinned.release('clean');
    if (attempt) return undefined;
    throw notAcquiredError(request, verb);
  }
  let since: string;
  try {
    const [row] = await pinned.query(identify);
    const lockedOn = Number(cell(row ?? {}, 'pid'));
    since = String(cell(row ?? {}, 'since'));
    if (!Number.isInteger(lockedOn) || !/^\d+$/.test(since)) throw new Error('pg_backend_pid() gave no pid');
    // A pooler the check could not see still shows here: the backend changed between statements.
    if (lockedOn !== pid) await refuseSession(pinned, request, verb, CHANGING_BACKENDS, true);
  } catch (error) {
    if (!LockUsageError.is(error)) {
      await pinned.release(died !== undefined ? 'dead' : 'unknown', asError(error));
      throw queryFailed(request, verb, 'checking', error);
    }
    throw error;
  }
  if (campaign !== undefined && died === undefined) {
    try {
      await campaign.onHeld(pinned);
    } catch (error) {
      await pinned.release(died !== undefined ? 'dead' : 'unknown', asError(error));
      throw error;
    }
  }
  if (died !== undefined) {
    await pinned.release('dead', asError(died));
    throw new LockLostError(
      `${verb}: the connection of the session ${describeKeys(request)} died as it was taken.`,
      {
        keys: request.keys,
        cause: died,
      },
    );
  }
  holder = new HeldSessionLock(port, db, pinned, request, trace, pid, since, heartbeatMs);
  return holder;
}

/** What a pool wait that outlasted the budget rejects with, inside this module only. */
const NOT_IN_TIME = Symbol('pglock.notInTime');

/** Gives back, unused, a connection that was pinned after its caller had given up on it. */
function handBack(late: PinnedConnection): void {
  Promise.resolve()
    .then(() => late.release('clean'))
    .catch(() => undefined);
}

function asError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}

/**
 * A session lock needs one server backend for its whole life. Straight to PostgreSQL the driver's
 * cancel-key pid is the backend pid, and that settles it. Through a pooler the key is the pooler's,
 * so probe from another connection: in session mode it gets another backend and ours stays; in
 * transaction mode it is handed the very backend we just used (PgBouncer reuses the last idle one),
 * or our own next statement lands elsewhere. No second connection within the probe timeout means
 * "could not check", which refuses too: a lock that may be shared must never be accepted.
 */
async function assertStableBackend<Db>(
  port: LockPort<Db, unknown>,
  db: Db,
  pinned: PinnedConnection,
  pid: number,
  request: LockRequest,
  verb: string,
  locked: boolean,
): Promise<void> {
  if (pinned.processID === pid) return;
  let reason: string | undefined;
  const open = port.controlConnection?.bind(port);
  if (open === undefined) reason = 'it cannot open a second connection to check';
  else {
    let control: ControlConnection | undefined;
    try {
      control = await within(open(db), PROBE_TIMEOUT_MS, 'no second connection', (late) => late.release());
      // One look can miss a transaction-mode pooler when other clients take the backend in between
      // (two instances probing at once were both let through). A session-mode pooler passes every
      // round; a transaction-mode one hands the control connection our backend (the one it used
      // last) or moves our statement elsewhere as soon as it is idle. Jitter between rounds keeps
      // two probers from falling into a lockstep that hides it.
      let stable = true;
      for (let round = 0; round < PROBE_ROUNDS && stable; round++) {
        if (round > 0) await new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
        const [again] = await pinned.query(backendPidStatement);
        const [other] = await control.query(backendPidStatement);
        stable = Number(cell(again ?? {}, 'pid')) === pid && Number(cell(other ?? {}, 'pid')) !== pid;
      }
      if (stable) return;
      reason = CHANGING_BACKENDS;
    } catch {
      reason = `no second connection answered within ${PROBE_TIMEOUT_MS} ms to check that it is not a transaction-mode pooler`;
    } finally {
      await control?.release();
    }
  }
  await refuseSession(pinned, request, verb, reason, locked);
}

const CHANGING_BACKENDS =
  'its statements run on changing server backends (a transaction-mode pooler, e.g. PgBouncer pool_mode = transaction)';

/** Gives the pinned connection up (unlocking first when `locked`) and throws the refusal. */
async function refuseSession(
  pinned: PinnedConnection,
  request: LockRequest,
  verb: string,
  reason: string,
  locked: boolean,
): Promise<never> {
  let released = true;
  if (locked) {
    try {
      for (const stmt of sessionUnlockStatements(request.keys, request.shared)) await pinned.query(stmt);
    } catch {
      released = false;
    }
  }
  await pinned.release('unknown', new Error('session lock refused'));
  throw new LockUsageError(
    `${verb}: the session ${describeKeys(request)} cannot be held through this connection: ${reason}, so an unlock or a heartbeat could land on another backend and two holders could both believe they hold it. ` +
      'Use withLock (transaction-scoped locks work through transaction pooling), or take session locks on a direct connection or through a session-mode pool. ' +
      (!locked
        ? 'Nothing was locked.'
        : released
          ? 'The lock was released.'
          : 'The connection was closed, which releases the lock.'),
    { keys: request.keys },
  );
}

/** The statement that counts how many of `keys` backend `pid` (or this connection's) holds. */
export function heldStatement(
  request: LockRequest,
  pid: number | undefined,
  since: string | undefined,
): Statement {
  const classids: number[] = [];
  const objids: number[] = [];
  const subids: number[] = [];
  for (const key of request.keys) {
    const tag = lockTag(key);
    classids.push(tag.classid);
    objids.push(tag.objid);
    subids.push(tag.objsubid);
  }
  const mode = request.shared ? 'ShareLock' : 'ExclusiveLock';
  // The marker keeps the lock's grant time readable from pg_stat_activity (the heartbeat resets
  // state_change): `since` is a number of milliseconds read from the server, digits only.
  const marker = since === undefined ? '' : ` /* pglock:held-since:${since} */`;
  const who = pid === undefined ? 'pg_backend_pid()' : '$4::text::int';
  const text =
    `SELECT count(*)::int AS held${marker} FROM pg_locks AS l ` +
    'JOIN unnest($1::text::bigint[], $2::text::bigint[], $3::text::int[]) AS k(c, o, s) ' +
    'ON l.classid = k.c::oid AND l.objid = k.o::oid AND l.objsubid = k.s ' +
    `WHERE l.locktype = 'advisory' AND l.granted AND l.pid = ${who} AND l.mode = '${mode}' ` +
    'AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())';
  const values = [`{${classids.join(',')}}`, `{${objids.join(',')}}`, `{${subids.join(',')}}`];
  if (pid !== undefined) values.push(String(pid));
  return statementText(text).bind(values);
}

// Module-private: the method is not part of the handle apps get.
const callbackContext = Symbol('pglock.sessionCallbackContext');

class HeldSessionLock implements SessionLock {
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
    return {
      root: this.#db as object,
      tx: undefined,
      connection: this.#pinned,
      depth: 0,
      parent: currentContext(),
      nested: undefined,
      open: true,
      activity: 0,
      lost: undefined,
      request: this.#request,
      verb: undefined,
      session: { keys: this.keys, shared: this.#request.shared },
    };
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
  #holds(): Promise<boolean> {
    const run =
      this.#pinned.heartbeatOn === 'control'
        ? this.#port.query(this.#db, this.#check)
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
    const detail = cause instanceof Error ? cause.message : String(cause);
    this.#controller.abort(
      new LockLostError(`The session ${describeKeys(this.#request)} was lost: ${detail}.`, {
        keys: this.keys,
        cause,
      }),
    );
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
      const holds = await this.#holds().catch(() => false);
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
  if (!(handle instanceof HeldSessionLock)) return undefined;
  const context = handle[callbackContext]();
  return term === undefined ? context : { ...context, term };
}

/**
 * Runs `fn` with a held session lock's `signal`, then releases the lock. When `fn` throws, its error
 * reaches the caller, never a release failure behind it (the connection is closed either way); when
 * `fn` resolves, a failed release rejects (the protection may have been gone).
 */
export async function runWithSessionLock<T>(
  handle: SessionLock,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  let result: T;
  try {
    // The callback runs in a context that names what its session holds: a lock call there for one of
    // those keys would wait for this session, and is refused instead.
    const context = sessionContext(handle);
    result = await (context === undefined ? fn(handle.signal) : runInContext(context, fn, handle.signal));
  } catch (error) {
    await handle.release().catch(() => undefined);
    throw error;
  }
  await handle.release();
  return result;
}
