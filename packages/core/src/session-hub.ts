import { acquire, isConnectionFailure } from './acquire.ts';
import { identifyBackendStatement } from './backend-statements.ts';
import { silentTrace, type Trace } from './diagnostics.ts';
import { LockLostError, LockUsageError } from './errors.ts';
import { HubConnection, UNWANTED } from './hub-connection.ts';
import { heldMarker, marked, tagOf } from './hub-statements.ts';
import type { LockKey } from './lock-key.ts';
import type { LockRequest } from './lock-options.ts';
import type { LockPort, PortConnection, Row } from './lock-port.ts';
import { releaseStatements } from './lock-statements.ts';
import { describeKeys, queryFailed, sessionLostError } from './messages.ts';
import { CHANGING_BACKENDS, sessionRefusal } from './pooler-check.ts';
import { cell } from './row-cell.ts';
import { asError, callbackContext, sessionCallbackContext } from './session-held.ts';
import type { SessionLock } from './session-lock.ts';
import { STALE_RETRIES, staleConnection, staleRetryPause } from './stale-connection.ts';
import { requestBound } from './start-bound.ts';
import type { Statement } from './statement.ts';

// Connection economy for plain session locks (issue 26 item 4), after DistributedLock's optimistic
// multiplexing: the session locks one process holds on one database share a connection instead of
// pinning one each, since PostgreSQL's max_connections (100 by default) would otherwise cap what a
// fleet can hold.
//
// - A lock is first tried on the hub's shared connection (one statement per lock space, as any
//   try). Granted, it is held there: one heartbeat checks every lock on the connection, and a lost
//   connection loses them all (each handle's `signal` aborts with LockLostError).
// - A key the shared connection holds, or is trying, is never tried there again: PostgreSQL grants a
//   session the same advisory lock twice. Such a call waits on a connection of its own, behind the
//   holder, as a taken key does: the server queues waiters (FIFO, seen in pg_locks), which a shared
//   connection cannot do without blocking every lock on it. So held locks that waited keep their
//   own connection, and only uncontended ones share (the common case: "one instance runs it").
// - The connection goes back to its pool as soon as it holds nothing, before the release that
//   emptied it resolves.

/** What {@link SessionHub.take} found: the held lock, or why the caller goes on elsewhere. */
export type SharedOutcome =
  | SessionLock
  /** A try found a key taken (by another session, or by this hub in a conflicting mode). */
  | 'busy'
  /** A key is held or being tried on the shared connection: take it on a connection of its own. */
  | 'elsewhere'
  /** The budget ran out while the pool had no connection for the hub. */
  | 'late';

interface Entry {
  readonly mode: 'x' | 's';
  held: boolean;
}

const hubs = new WeakMap<object, Map<string, SessionHub>>();

/**
 * The hub of `db`'s session locks with this heartbeat, made on first use and kept while `db` lives.
 *
 * @example
 * ```ts
 * import { sessionHub } from './session-hub.ts';
 *
 * const outcome = await sessionHub(port, pool, 1_000).take(request, 'acquireSessionLock', undefined, trace);
 * if (typeof outcome === 'object') await outcome.release();
 * ```
 */
export function sessionHub<Db>(port: LockPort<Db, unknown>, db: Db, heartbeatMs: number): SessionHub {
  const root = db as unknown as object;
  let byTiming = hubs.get(root);
  if (byTiming === undefined) {
    byTiming = new Map();
    hubs.set(root, byTiming);
  }
  const id = `${port.name}\u0000${heartbeatMs}`;
  let hub = byTiming.get(id);
  if (hub === undefined) {
    hub = new SessionHub(port as LockPort<unknown, unknown>, root, heartbeatMs);
    byTiming.set(id, hub);
  }
  return hub;
}

/** Per-lock grant times a statement carries: about what fits in PostgreSQL's 1 kB of its text. */
const MARKER_ENTRIES = 24;

/** What a pool wait that outlasted the budget rejects with, inside this module only. */
const NOT_IN_TIME = Symbol('pglock.notInTime');

/**
 * The session locks of one process on one database and heartbeat, sharing one connection.
 */
export class SessionHub {
  readonly db: object;
  readonly #port: LockPort<unknown, unknown>;
  readonly #heartbeatMs: number;
  /** Every key the shared connection holds or is trying, by `tagOf` (one entry per key). */
  readonly #entries = new Map<string, Entry>();
  readonly #held = new Set<SharedSessionLock>();
  /** Calls between their reservation and their outcome: the connection stays while any runs. */
  #pending = 0;
  #connection: HubConnection | undefined;
  #opening: Promise<HubConnection> | undefined;
  #closing: Promise<void> = Promise.resolve();
  #heartbeat: NodeJS.Timeout | undefined;
  #beating = false;

  constructor(port: LockPort<unknown, unknown>, db: object, heartbeatMs: number) {
    this.#port = port;
    this.db = db;
    this.#heartbeatMs = heartbeatMs;
  }

  /**
   * Tries `request`'s keys on the shared connection, its pool wait bounded by `deadline` and the
   * request's signal. Rejects as a session lock's try does (LockUsageError through a
   * transaction-mode pooler, LockAbortedError, LockQueryError).
   */
  async take(
    request: LockRequest,
    verb: string,
    deadline: number | undefined,
    trace: Trace,
  ): Promise<SharedOutcome> {
    const tags = request.keys.map(tagOf);
    const mode = request.shared ? 's' : 'x';
    const clashes = tags.flatMap((tag) => this.#entries.get(tag) ?? []);
    if (clashes.length > 0) {
      // Held here in a conflicting mode, a key is taken for every other session too: a try needs
      // no connection to know.
      const taken = clashes.some((entry) => entry.held && (entry.mode === 'x' || mode === 'x'));
      return taken && request.timeoutMs === 0 ? 'busy' : 'elsewhere';
    }
    const entries = tags.map((tag) => {
      const entry: Entry = { mode, held: false };
      this.#entries.set(tag, entry);
      return [tag, entry] as const;
    });
    this.#pending++;
    let handle: SharedSessionLock | undefined;
    try {
      const connection = await this.#connect(request, verb, deadline);
      if (connection === 'late') return 'late';
      handle = await this.#try(connection, request, verb, trace);
      if (handle === undefined) return 'busy';
      for (const [, entry] of entries) entry.held = true;
      return handle;
    } finally {
      this.#pending--;
      if (handle === undefined) {
        for (const [tag, entry] of entries) if (this.#entries.get(tag) === entry) this.#entries.delete(tag);
      }
      this.#settle();
    }
  }

  async #connect(
    request: LockRequest,
    verb: string,
    deadline: number | undefined,
  ): Promise<HubConnection | 'late'> {
    for (let attempt = 0; ; attempt++) {
      // The pool's wait for a connection comes out of the lock's budget, and the signal ends it (a
      // bound per attempt: one that settled no longer times anything).
      const bound = requestBound(request, verb, deadline, () => NOT_IN_TIME);
      try {
        const opening = this.#open(request, verb);
        return bound === undefined ? await opening : await bound.wait(opening);
      } catch (error) {
        if (error === NOT_IN_TIME) return 'late';
        // Opened as the last caller gave up, and given back: this call came just after.
        if (error === UNWANTED && attempt === 0) continue;
        // The pool handed out a connection whose backend had ended while it sat idle there (a
        // terminated backend the driver had not noticed yet): it was given back as dead; another
        // (stale-connection.ts).
        if (attempt < STALE_RETRIES && staleConnection(error)) {
          await staleRetryPause(deadline);
          continue;
        }
        throw error;
      }
    }
  }

  #open(request: LockRequest, verb: string): Promise<HubConnection> {
    const current = this.#connection;
    if (current !== undefined && current.failed === undefined) return Promise.resolve(current);
    this.#opening ??= this.#closing
      .then(() =>
        HubConnection.open(
          this.#port,
          this.db,
          undefined,
          request,
          verb,
          (connection, cause, state) => this.#lost(connection, cause, state),
          () => this.#pending > 0 || this.#held.size > 0,
        ),
      )
      .then(
        (connection) => {
          this.#opening = undefined;
          this.#connection = connection;
          // Everyone who asked may have given up while it was checked (their budget ran out): then
          // it goes straight back.
          this.#settle();
          return connection;
        },
        (error: unknown) => {
          this.#opening = undefined;
          throw error;
        },
      );
    return this.#opening;
  }

  /** The connection's statements with the held-for marker of every lock on it. */
  #on(connection: HubConnection): PortConnection {
    return { query: (statement) => this.#run(connection, statement) };
  }

  #run(connection: HubConnection, statement: Statement): Promise<readonly Row[]> {
    return connection.run(marked(statement, this.#marker(connection)));
  }

  async #try(
    connection: HubConnection,
    request: LockRequest,
    verb: string,
    trace: Trace,
  ): Promise<SharedSessionLock | undefined> {
    const on = this.#on(connection);
    let held: boolean;
    try {
      held = await acquire({
        connection: on,
        request: { ...request, timeoutMs: 0 },
        scope: 'session',
        deadline: undefined,
        ownsTransaction: false,
        cancel: undefined,
        verb,
        // The caller reports the call's outcome once, wherever it is decided.
        trace: silentTrace,
      });
    } catch (error) {
      // A failed statement may have left keys taken (a session lock outlives it): the connection is
      // not trusted with them, nor with what it held.
      connection.fail(asError(error), isConnectionFailure(error) ? 'dead' : 'unknown');
      throw error;
    }
    if (!held) return undefined;
    let since: string;
    try {
      const [row] = await on.query(identifyBackendStatement);
      const pid = Number(cell(row ?? {}, 'pid'));
      since = String(cell(row ?? {}, 'since'));
      if (!Number.isInteger(pid) || !/^\d+$/.test(since)) throw new Error('pg_backend_pid() gave no pid');
      // A pooler the check could not see still shows here: the backend changed between statements.
      if (pid !== connection.pid) {
        const refused = sessionRefusal(request, verb, CHANGING_BACKENDS, 'closed');
        connection.fail(refused, 'unknown');
        throw refused;
      }
    } catch (error) {
      if (LockUsageError.is(error)) throw error;
      connection.fail(asError(error), 'unknown');
      throw queryFailed(request, verb, 'checking', error);
    }
    if (connection.failed !== undefined) throw queryFailed(request, verb, 'checking', connection.failed);
    const handle = new SharedSessionLock(this, connection, request, trace, since);
    this.#held.add(handle);
    this.#watch(connection);
    return handle;
  }

  /** The held-for marker of `connection`: each lock's grant time, the oldest first. */
  #marker(connection: HubConnection): string {
    const on = [...this.#held].filter((handle) => handle.connection === connection);
    if (on.length === 0) return '';
    on.sort((a, b) => (BigInt(a.since) < BigInt(b.since) ? -1 : 1));
    // PostgreSQL keeps the first 1 kB of a statement's text: entries past that would only lengthen
    // every statement (a connection holding 1,000 locks sent 38 kB each).
    const perKey = on
      .flatMap((handle) => handle.keys.map((key) => [tagOf(key), handle.since] as const))
      .slice(0, MARKER_ENTRIES);
    return heldMarker(on[0]?.since, perKey);
  }

  /** Drops a handle from the hub (its keys may be taken here again). */
  #forget(handle: SharedSessionLock): void {
    if (!this.#held.delete(handle)) return;
    for (const key of handle.keys) this.#entries.delete(tagOf(key));
  }

  /** Releases `handle` on its connection; the last lock out gives the connection back first. */
  async release(handle: SharedSessionLock): Promise<void> {
    const { connection } = handle;
    try {
      if (handle.signal.aborted) throw handle.signal.reason;
      if (!this.#held.has(handle) || connection.failed !== undefined) {
        const lost = new LockLostError(
          `The session ${describeKeys(handle.request)} was no longer held at release: its connection died.`,
          { keys: handle.keys, cause: connection.failed },
        );
        handle.trace.lost(lost);
        throw lost;
      }
      let notHeld = 0;
      try {
        // A port that keeps statements off a connection that may have failed asks elsewhere first.
        if (connection.checksFromControl) {
          const held = await connection.heldKeys(
            this.#heartbeatMs,
            (statement) => this.#port.query(this.db, statement),
            this.#marker(connection),
            true,
          );
          if (!handle.holdsIn(held)) {
            const gone = new Error(`backend ${connection.pid} no longer holds it`);
            connection.fail(gone, 'dead');
            throw gone;
          }
        }
        this.#forget(handle);
        // Sent at once, in order: a try of these keys queued behind them finds them released.
        const runs = releaseStatements(handle.keys, handle.request.shared).map((statement) =>
          this.#run(connection, statement),
        );
        for (const rows of await Promise.all(runs)) {
          notHeld += rows.filter((row) => cell(row, 'ok') !== true).length;
        }
      } catch (error) {
        this.#forget(handle);
        connection.fail(asError(error), 'unknown');
        throw queryFailed(handle.request, 'release', 'releasing', error);
      }
      if (notHeld > 0) {
        const lost = new LockLostError(
          `The session ${describeKeys(handle.request)} was no longer held at release (${notHeld} not held): the connection lost it.`,
          { keys: handle.keys },
        );
        handle.trace.lost(lost);
        connection.fail(lost, 'unknown');
        throw lost;
      }
      handle.trace.released();
    } finally {
      this.#forget(handle);
      this.#settle();
      await this.#closing;
    }
  }

  /** Gives the shared connection back once nothing is held or being tried on it. */
  #settle(): void {
    if (this.#pending > 0 || this.#held.size > 0) return;
    const connection = this.#connection;
    if (connection === undefined) return;
    this.#connection = undefined;
    this.#stopWatching();
    this.#closing = connection.close('clean');
  }

  /** Starts the heartbeat of a connection that holds locks (once). */
  #watch(connection: HubConnection): void {
    if (this.#heartbeat !== undefined) return;
    this.#heartbeat = setInterval(() => void this.#beat(connection), this.#heartbeatMs);
    // A held lock alone does not keep the process running, as a dedicated one's heartbeat.
    this.#heartbeat.unref();
  }

  #stopWatching(): void {
    if (this.#heartbeat !== undefined) clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
  }

  async #beat(connection: HubConnection): Promise<void> {
    if (this.#beating || connection.failed !== undefined) return;
    const handles = [...this.#held].filter((handle) => handle.connection === connection);
    if (handles.length === 0) return;
    this.#beating = true;
    try {
      const held = await connection.heldKeys(
        this.#heartbeatMs,
        (statement) => this.#port.query(this.db, statement),
        this.#marker(connection),
      );
      // A lock of its own that the backend no longer holds means the backend ended (nothing else
      // unlocks another session's lock): the connection is dead, and nothing more is sent on it.
      if (handles.some((handle) => this.#held.has(handle) && !handle.holdsIn(held))) {
        connection.fail(new Error(`backend ${connection.pid} no longer holds its locks`), 'dead');
      }
    } catch (error) {
      connection.fail(asError(error), 'unknown');
    } finally {
      this.#beating = false;
    }
  }

  /** The shared connection failed: every lock on it is lost, and it is closed without reuse. */
  #lost(connection: HubConnection, cause: Error, state: 'unknown' | 'dead'): void {
    if (this.#connection === connection) {
      this.#connection = undefined;
      this.#stopWatching();
    }
    for (const handle of [...this.#held]) {
      if (handle.connection !== connection) continue;
      this.#forget(handle);
      handle.lose(cause);
    }
    this.#closing = connection.close(state, cause);
  }
}

/** A session lock held on a hub's shared connection. */
export class SharedSessionLock implements SessionLock {
  readonly keys: readonly LockKey[];
  readonly pid: number;
  /** The server's clock at the grant, in milliseconds: the held-for marker. */
  readonly since: string;
  readonly connection: HubConnection;
  readonly request: LockRequest;
  readonly trace: Trace;
  readonly #hub: SessionHub;
  readonly #controller = new AbortController();
  #released: Promise<void> | undefined;

  constructor(hub: SessionHub, connection: HubConnection, request: LockRequest, trace: Trace, since: string) {
    this.#hub = hub;
    this.connection = connection;
    this.keys = request.keys;
    this.pid = connection.pid;
    this.request = request;
    this.trace = trace;
    this.since = since;
  }

  get key(): LockKey {
    return this.keys[0] as LockKey;
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Whether every key is in `held` (the heartbeat's `tag:mode` set). */
  holdsIn(held: ReadonlySet<string>): boolean {
    const mode = this.request.shared ? 's' : 'x';
    return this.keys.every((key) => held.has(`${tagOf(key)}:${mode}`));
  }

  [callbackContext]() {
    return sessionCallbackContext(this.#hub.db, this.connection.connection, this.request);
  }

  release(): Promise<void> {
    this.#released ??= this.#hub.release(this);
    return this.#released;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }

  /** Marks the lock lost (idempotent; not once its release began): `signal` aborts. */
  lose(cause: unknown): void {
    if (this.#controller.signal.aborted || this.#released !== undefined) return;
    this.#controller.abort(sessionLostError(this.request, cause));
    this.trace.lost(this.#controller.signal.reason);
  }
}
