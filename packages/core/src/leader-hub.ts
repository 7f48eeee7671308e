import { onAbort } from './abort-listeners.ts';
import { startTrace } from './diagnostics.ts';
import { LockLostError } from './errors.ts';
import { HubConnection, UNWANTED } from './hub-connection.ts';
import { heldMarker, tagOf, tryKeysStatement, unlockKeyStatement } from './hub-statements.ts';
import { HubTerm, type TermOwner } from './hub-term.ts';
import { Lease } from './leader-lease.ts';
import type { BigintLockKey } from './lock-key.ts';
import { type LockRequest, lockRequest } from './lock-options.ts';
import type { LockPort, PortConnection } from './lock-port.ts';
import { describeKeys, queryFailed } from './messages.ts';
import { SESSION_LOCK_OPTION_KEYS } from './option-keys.ts';
import { cell } from './row-cell.ts';
import { asError } from './session-held.ts';

// Connection economy for leaders (issue 26 item 4). The leaders of one process on one database
// share connections instead of pinning one each: a PostgreSQL's max_connections (100 by default)
// would otherwise cap a fleet at a handful of instances × jobs.
//
// - Held: a campaign first tries its lock on the hub's one shared connection (tries of campaigns
//   that start together go in one statement). Its term is written there and kept by one heartbeat
//   for the whole connection, under one lease (the connection's idle_session_timeout, as a
//   dedicated campaign's: leader-lease.ts). An in-process registry is the re-entrancy guard: a key
//   the shared connection holds is never tried there again (PostgreSQL would grant it twice).
// - Waiting: the first DEDICATED_WAITERS standbys of a hub wait as before, on the server, each on a
//   connection of its own (FIFO, elected the moment the lock is free, seen in pg_locks as waiters);
//   a standby won that way leads on that connection. Every further standby polls: its key is tried
//   on the shared connection every POLL_MS (all polled keys in one statement), and at once when a
//   leader of the same process releases it. A SIGKILLed leader's names are taken within POLL_MS
//   plus their elections. There is no LISTEN/NOTIFY: a releasing process may be the one that died.
// So a process's leaders use at most 1 + DEDICATED_WAITERS connections per database and lease
// timing, whatever the number of names.

/** Standbys of one hub that wait on the server, each on a connection of its own. */
export const DEDICATED_WAITERS = 2;
/** The longest a polling standby goes between tries of its key (the safety net; a local release wakes it). */
export const POLL_MS = 200;

/** The lease timing a hub's connection is armed with (one hub per database and timing). */
export interface HubTiming {
  readonly leaseMs: number;
  readonly heartbeatMs: number;
}

interface Want {
  readonly key: BigintLockKey;
  /** `'try'`: once, then settle `undefined` when taken elsewhere; `'poll'`: until granted or stopped. */
  readonly mode: 'try' | 'poll';
  readonly elect: (connection: PortConnection) => Promise<number>;
  readonly signal: AbortSignal;
  readonly resolve: (term: HubTerm | undefined) => void;
  readonly reject: (error: unknown) => void;
  off: () => void;
}

const hubs = new WeakMap<object, Map<string, LeaderHub>>();

/**
 * The hub of `db`'s leaders with this lease timing, made on first use and kept while `db` lives.
 *
 * @example
 * ```ts
 * import { leaderHub } from './leader-hub.ts';
 *
 * const hub = leaderHub(port, pool, { leaseMs: 5_000, heartbeatMs: 1_000 }, 'leader');
 * const term = await hub.claim(key, elect, signal); // undefined: led elsewhere
 * ```
 */
export function leaderHub<Db>(
  port: LockPort<Db, unknown>,
  db: Db,
  timing: HubTiming,
  verb: string,
): LeaderHub {
  const root = db as unknown as object;
  let byTiming = hubs.get(root);
  if (byTiming === undefined) {
    byTiming = new Map();
    hubs.set(root, byTiming);
  }
  const id = `${port.name}\u0000${timing.leaseMs}\u0000${timing.heartbeatMs}\u0000${verb}`;
  let hub = byTiming.get(id);
  if (hub === undefined) {
    hub = new LeaderHub(port as LockPort<unknown, unknown>, root, timing, verb);
    byTiming.set(id, hub);
  }
  return hub;
}

/**
 * The leaders of one process on one database and lease timing, sharing connections. A campaign
 * asks it for its lock (`claim`, then `reserveDedicated` or `wait`) and gets a {@link HubTerm}.
 */
export class LeaderHub implements TermOwner {
  readonly #port: LockPort<unknown, unknown>;
  readonly #db: object;
  readonly #timing: HubTiming;
  readonly #verb: string;
  readonly #pollMs: number;
  readonly #reporters = new Set<(error: unknown) => void>();
  readonly #wants = new Map<bigint, Want[]>();
  readonly #terms = new Map<bigint, HubTerm>();
  #lease: Lease | undefined;
  #dedicated = 0;
  #connection: HubConnection | undefined;
  #opening: Promise<HubConnection> | undefined;
  #rounding = false;
  #again = false;
  #immediate: NodeJS.Immediate | undefined;
  #timer: NodeJS.Timeout | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #beating = false;
  #unwatchLease: (() => void) | undefined;
  #closing: Promise<void> = Promise.resolve();

  constructor(port: LockPort<unknown, unknown>, db: object, timing: HubTiming, verb: string) {
    this.#port = port;
    this.#db = db;
    this.#timing = timing;
    this.#verb = verb;
    // Below the lease too: a polling connection must never sit idle past its idle_session_timeout.
    this.#pollMs = Math.min(POLL_MS, timing.heartbeatMs);
  }

  /** The lease of the shared connection (what a term on it ends by). */
  lease(key: BigintLockKey): Lease {
    this.#lease ??= new Lease(key, this.#timing.leaseMs, this.#verb, (error) => {
      for (const report of this.#reporters) report(error);
    });
    return this.#lease;
  }

  /** A campaign joins (its reporter hears the shared connection's reports); returns its leave. */
  register(report: (error: unknown) => void): () => Promise<void> {
    this.#reporters.add(report);
    return () => {
      this.#reporters.delete(report);
      this.#settle();
      return this.#closing;
    };
  }

  /** Tries `key` once on the shared connection: its term, or `undefined` when it is led elsewhere or `signal` aborted. */
  claim(key: BigintLockKey, elect: Want['elect'], signal: AbortSignal): Promise<HubTerm | undefined> {
    return this.#want(key, 'try', elect, signal);
  }

  /** Polls `key` on the shared connection until it is granted (its term) or `signal` aborts (`undefined`). */
  wait(key: BigintLockKey, elect: Want['elect'], signal: AbortSignal): Promise<HubTerm | undefined> {
    return this.#want(key, 'poll', elect, signal);
  }

  /** Takes one of the hub's server-side waits (a connection of its own), if one is free. */
  reserveDedicated(): boolean {
    if (this.#dedicated >= DEDICATED_WAITERS) return false;
    this.#dedicated++;
    return true;
  }

  /** Gives back a server-side wait (or the term it became); a standby polling that key tries at once. */
  freeDedicated(key: BigintLockKey): void {
    this.#dedicated--;
    if (this.#wants.has(key.value)) this.#schedule('now');
  }

  #want(
    key: BigintLockKey,
    mode: Want['mode'],
    elect: Want['elect'],
    signal: AbortSignal,
  ): Promise<HubTerm | undefined> {
    if (signal.aborted) return Promise.resolve(undefined);
    return new Promise((resolve, reject) => {
      const want: Want = { key, mode, elect, signal, resolve, reject, off: () => undefined };
      const list = this.#wants.get(key.value) ?? [];
      list.push(want);
      this.#wants.set(key.value, list);
      want.off = onAbort(signal, () => {
        this.#drop(want);
        resolve(undefined);
        this.#settle();
      });
      this.#schedule(mode === 'try' ? 'now' : 'later');
    });
  }

  #drop(want: Want): void {
    const list = this.#wants.get(want.key.value);
    if (list === undefined) return;
    const at = list.indexOf(want);
    if (at >= 0) list.splice(at, 1);
    if (list.length === 0) this.#wants.delete(want.key.value);
  }

  /** Settles a want (once): it no longer listens to its signal and leaves the queue. */
  #take(want: Want): Want {
    want.off();
    this.#drop(want);
    return want;
  }

  #schedule(when: 'now' | 'later'): void {
    if (this.#rounding) {
      if (when === 'now') this.#again = true;
      return;
    }
    if (when === 'now') {
      if (this.#timer !== undefined) clearTimeout(this.#timer);
      this.#timer = undefined;
      // Campaigns that start in the same turn of the event loop go in one statement.
      this.#immediate ??= setImmediate(() => {
        this.#immediate = undefined;
        void this.#round();
      });
      return;
    }
    if (this.#immediate !== undefined || this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#round();
    }, this.#pollMs);
    // Like the heartbeat's: a campaign's timers alone do not keep the process running.
    this.#timer.unref();
  }

  /** The first want of each key the shared connection does not hold; try-wants of held keys settle. */
  #batch(): Want[] {
    const batch: Want[] = [];
    for (const [value, list] of [...this.#wants]) {
      if (this.#terms.has(value)) {
        for (const want of list.filter((w) => w.mode === 'try')) this.#take(want).resolve(undefined);
        continue;
      }
      const first = list[0];
      if (first !== undefined) batch.push(first);
    }
    return batch;
  }

  async #round(): Promise<void> {
    if (this.#rounding) return;
    this.#rounding = true;
    try {
      do {
        this.#again = false;
        if (this.#batch().length === 0) break;
        let connection: HubConnection;
        try {
          connection = await this.#open(this.#batch()[0]?.key);
        } catch (error) {
          if (error === UNWANTED) break;
          // Every campaign that asked hears why (it reports it and backs off, as a failed campaign does).
          for (const want of this.#batch()) this.#take(want).reject(error);
          break;
        }
        const batch = this.#batch();
        if (batch.length === 0) break;
        let rows: readonly Record<string, unknown>[];
        try {
          rows = await connection.run(
            tryKeysStatement(
              batch.map((want) => want.key),
              this.#oldestSince(connection),
            ),
          );
        } catch (error) {
          // A failed statement may have taken some of the keys (a session lock outlives a failed
          // statement): the connection is not trusted with them, nor with what it held.
          const failed = queryFailed({ keys: batch.map((want) => want.key) }, this.#verb, 'trying', error);
          connection.fail(asError(error), 'unknown');
          for (const want of batch) this.#take(want).reject(failed);
          break;
        }
        for (const row of rows) await this.#settleTry(connection, row);
      } while (this.#again);
    } finally {
      this.#rounding = false;
      this.#afterRound();
    }
  }

  async #settleTry(connection: HubConnection, row: Record<string, unknown>): Promise<void> {
    const value = BigInt(String(cell(row, 'key')));
    const list = this.#wants.get(value) ?? [];
    if (cell(row, 'ok') !== true) {
      for (const want of list.filter((w) => w.mode === 'try')) this.#take(want).resolve(undefined);
      return;
    }
    const want = list[0];
    if (want === undefined) {
      // Everyone who wanted it stopped while the statement ran: it goes straight back.
      await connection
        .run(unlockKeyStatement({ form: 'bigint', value }, undefined))
        .catch((error: unknown) => connection.fail(asError(error), 'unknown'));
      return;
    }
    this.#take(want);
    const request = this.#request(want.key);
    const trace = startTrace(request, 'session');
    trace.requested();
    const term = new HubTerm(this, this.#db, connection, request, trace, String(cell(row, 'since')));
    this.#terms.set(value, term);
    this.#watch(connection);
    try {
      term.term = await want.elect(connection.connection);
    } catch (error) {
      this.#terms.delete(value);
      await connection
        .run(unlockKeyStatement(want.key, this.#oldestSince(connection)))
        .catch((failure: unknown) => connection.fail(asError(failure), 'unknown'));
      want.reject(error);
      return;
    }
    if (connection.failed !== undefined) {
      want.reject(queryFailed(request, this.#verb, 'waiting for', connection.failed));
      return;
    }
    trace.acquired();
    // The remaining try-wants of this key are led here now.
    for (const other of (this.#wants.get(value) ?? []).filter((w) => w.mode === 'try')) {
      this.#take(other).resolve(undefined);
    }
    if (want.signal.aborted) {
      want.resolve(undefined);
      await term.release().catch(() => undefined);
      return;
    }
    want.resolve(term);
  }

  #afterRound(): void {
    if (this.#again) {
      this.#schedule('now');
      return;
    }
    const polled = [...this.#wants.keys()].some((value) => !this.#terms.has(value));
    if (polled) this.#schedule('later');
    this.#settle();
  }

  /** Gives the shared connection back once nothing is held, wanted or running on it. */
  #settle(): void {
    if (this.#rounding || this.#terms.size > 0 || this.#wants.size > 0) return;
    const connection = this.#connection;
    if (connection === undefined) return;
    this.#connection = undefined;
    this.#stopWatching();
    this.#closing = connection.close('clean');
  }

  #open(key: BigintLockKey | undefined): Promise<HubConnection> {
    const current = this.#connection;
    if (current !== undefined && current.failed === undefined) return Promise.resolve(current);
    const first: BigintLockKey = key ?? { form: 'bigint', value: 0n };
    this.#opening ??= this.#closing
      .then(() =>
        HubConnection.open(
          this.#port,
          this.#db,
          this.lease(first),
          this.#request(first),
          this.#verb,
          (connection, cause, state) => this.#lost(connection, cause, state),
          () => this.#wants.size > 0,
        ),
      )
      .then(
        (connection) => {
          this.#opening = undefined;
          this.#connection = connection;
          return connection;
        },
        (error: unknown) => {
          this.#opening = undefined;
          throw error;
        },
      );
    return this.#opening;
  }

  #request(key: BigintLockKey): LockRequest {
    return lockRequest(key, undefined, undefined, this.#verb, SESSION_LOCK_OPTION_KEYS);
  }

  /** The grant time of the oldest term on `connection`: the held-for marker of its statements. */
  #oldestSince(connection: HubConnection): string | undefined {
    let oldest: string | undefined;
    for (const term of this.#terms.values()) {
      if (term.connection !== connection) continue;
      if (oldest === undefined || BigInt(term.since) < BigInt(oldest)) oldest = term.since;
    }
    return oldest;
  }

  /** Starts the heartbeat and the lease's watch of a connection that holds terms (once). */
  #watch(connection: HubConnection): void {
    if (this.#heartbeat !== undefined) return;
    this.#heartbeat = setInterval(() => void this.#beat(connection), this.#timing.heartbeatMs);
    this.#heartbeat.unref();
    const lease = this.#lease;
    this.#unwatchLease = lease?.watch(() => connection.fail(new Error(leaseRanOut(lease)), 'unknown'));
  }

  #stopWatching(): void {
    if (this.#heartbeat !== undefined) clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
    this.#unwatchLease?.();
    this.#unwatchLease = undefined;
  }

  async #beat(connection: HubConnection): Promise<void> {
    if (this.#beating || connection.failed !== undefined) return;
    const terms = [...this.#terms.values()].filter(
      (term) => term.connection === connection && !term.releasing,
    );
    if (terms.length === 0) return;
    this.#beating = true;
    try {
      const held = await connection.heldKeys(
        this.#timing.heartbeatMs,
        (statement) => this.#port.query(this.#db, statement),
        heldMarker(this.#oldestSince(connection)),
      );
      // A lock of its own that the backend no longer holds means the backend ended (nothing else
      // unlocks another session's lock): the connection is dead, and nothing more is sent on it
      // (postgres.js would throw from a timer on a write to it, porsager/postgres#1208).
      if (terms.some((term) => !held.has(`${tagOf(term.key)}:x`) && !term.releasing)) {
        connection.fail(new Error(`backend ${connection.pid} no longer holds its locks`), 'dead');
      }
    } catch (error) {
      connection.fail(asError(error), 'unknown');
    } finally {
      this.#beating = false;
    }
    this.#settle();
  }

  /** The shared connection failed: every term on it is lost, and it is closed without reuse. */
  #lost(connection: HubConnection, cause: Error, state: 'unknown' | 'dead'): void {
    if (this.#connection === connection) {
      this.#connection = undefined;
      this.#stopWatching();
    }
    for (const term of [...this.#terms.values()]) {
      if (term.connection !== connection) continue;
      this.#terms.delete(term.key.value);
      term.lose(cause);
    }
    this.#closing = connection.close(state, cause);
    // Standbys polling here go on, on a new connection.
    if (this.#wants.size > 0) this.#schedule('later');
  }

  async releaseTerm(term: HubTerm): Promise<void> {
    const connection = term.connection;
    try {
      if (term.signal.aborted) throw term.signal.reason;
      const still = this.#terms.get(term.key.value) === term;
      if (!still || connection.failed !== undefined) {
        const lost = new LockLostError(
          `The session ${describeKeys(term.request)} was no longer held at release: its connection died.`,
          { keys: term.keys, cause: connection.failed },
        );
        term.trace.lost(lost);
        throw lost;
      }
      let rows: readonly Record<string, unknown>[];
      try {
        // A port that keeps statements off a connection that may have failed asks elsewhere first.
        if (connection.checksFromControl) {
          const held = await connection.heldKeys(
            this.#timing.heartbeatMs,
            (statement) => this.#port.query(this.#db, statement),
            heldMarker(this.#oldestSince(connection)),
            true,
          );
          if (!held.has(`${tagOf(term.key)}:x`)) {
            const gone = new Error(`backend ${connection.pid} no longer holds it`);
            connection.fail(gone, 'dead');
            throw gone;
          }
        }
        this.#terms.delete(term.key.value);
        rows = await connection.run(unlockKeyStatement(term.key, this.#oldestSince(connection)));
      } catch (error) {
        this.#terms.delete(term.key.value);
        connection.fail(asError(error), 'unknown');
        throw queryFailed(term.request, 'release', 'releasing', error);
      }
      if (cell(rows[0] ?? {}, 'ok') !== true) {
        const lost = new LockLostError(
          `The session ${describeKeys(term.request)} was no longer held at release: the connection lost it.`,
          { keys: term.keys },
        );
        term.trace.lost(lost);
        throw lost;
      }
      term.trace.released();
    } finally {
      if (this.#terms.get(term.key.value) === term) this.#terms.delete(term.key.value);
      // A standby of this process polling the key tries it at once.
      if (this.#wants.has(term.key.value)) this.#schedule('now');
      this.#settle();
    }
  }
}

function leaseRanOut(lease: Lease): string {
  return `the lease of the shared leader connection ran out (no statement on it was answered within ${lease.leaseMs} ms; the process may have been frozen)`;
}
