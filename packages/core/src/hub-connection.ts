import { backendAliveStatement } from './backend-statements.ts';
import { freshAnswer } from './fresh-answer.ts';
import { heldKeysStatement } from './hub-statements.ts';
import type { Lease } from './leader-lease.ts';
import type { LockRequest } from './lock-options.ts';
import type { LockPort, PinnedConnection, PortConnection, Row } from './lock-port.ts';
import { queryFailed } from './messages.ts';
import { pinnedBackend } from './pooler-check.ts';
import { cell } from './row-cell.ts';
import { within } from './run-cancellable.ts';
import { asError } from './session-held.ts';
import { pinFailed } from './stale-connection.ts';
import type { Statement } from './statement.ts';

// One connection that many leaders of a process share (leader-hub.ts): pinned, checked and armed
// for the lease as a dedicated campaign's is (session-lock.ts, leader-lease.ts), with its
// statements sent one at a time, and its death reported once.

/** A check from another connection may have to wait for the pool to open one (as session-held.ts). */
const MIN_CONTROL_CHECK_MS = 2_000;

/** What {@link HubConnection.open} rejects with when nobody wanted the connection by the time it came. */
export const UNWANTED = Symbol('pglock.unwantedConnection');

/** How a shared connection's owner hears that it can no longer be trusted with its locks. */
export type OnConnectionLost = (connection: HubConnection, cause: Error, state: 'unknown' | 'dead') => void;

/**
 * A pinned connection shared by the leaders of one hub, or the session locks of one (session-hub.ts).
 *
 * @example
 * ```ts
 * import { HubConnection } from './hub-connection.ts';
 *
 * const connection = await HubConnection.open(port, db, lease, request, 'leader', onLost);
 * const rows = await connection.run(statement);
 * await connection.close('clean');
 * ```
 */
export class HubConnection {
  readonly pid: number;
  readonly #pinned: PinnedConnection;
  readonly #onLost: OnConnectionLost;
  #chain: Promise<unknown> = Promise.resolve();
  #failed: Error | undefined;
  /** Rejects once the connection failed: what a statement still in flight on it settles with. */
  readonly #failure: Promise<never>;
  #rejectFailure: (cause: Error) => void = () => undefined;
  #closed: Promise<void> | undefined;

  private constructor(pinned: PinnedConnection, pid: number, onLost: OnConnectionLost) {
    this.#pinned = pinned;
    this.pid = pid;
    this.#onLost = onLost;
    this.#failure = new Promise<never>((_, reject) => {
      this.#rejectFailure = reject;
    });
    // Nobody may be waiting on a statement when it fails.
    this.#failure.catch(() => undefined);
  }

  /**
   * Pins a connection of `db`, refuses a transaction-mode pooler (LockUsageError, as a session lock
   * does), and arms the lease on it (leaders; plain session locks have none). Rejects, with the connection given back, when any step fails.
   */
  static async open<Db>(
    port: LockPort<Db, unknown>,
    db: Db,
    lease: Lease | undefined,
    request: LockRequest,
    verb: string,
    onLost: OnConnectionLost,
    wanted: () => boolean = () => true,
  ): Promise<HubConnection> {
    const pin = port.pin?.bind(port);
    if (pin === undefined) throw new Error('pglock bug: a leader hub without session locks');
    let connection: HubConnection | undefined;
    let died: Error | undefined;
    const pinned = await pin(db, (cause) => {
      died ??= asError(cause ?? new Error('the connection ended'));
      connection?.fail(died, 'dead');
    }).catch((error: unknown) => {
      throw pinFailed(request, verb, error);
    });
    // Everyone who asked gave up while the pool was exhausted: the late connection goes straight
    // back, unused (a campaign stopped on SIGTERM must not keep the pool's only connection).
    if (!wanted() && died === undefined) {
      await Promise.resolve(pinned.release('clean')).catch(() => undefined);
      throw UNWANTED;
    }
    const pid = await pinnedBackend(port, db, pinned, request, verb, () => died !== undefined);
    const alive = () =>
      port.query(db, backendAliveStatement(pid)).then(([row]) => Number(cell(row ?? {}, 'alive')) > 0);
    let armed = pinned;
    try {
      if (lease !== undefined) armed = await lease.arm(pinned, alive);
    } catch (error) {
      await Promise.resolve(pinned.release(died !== undefined ? 'dead' : 'unknown', asError(error))).catch(
        () => undefined,
      );
      throw queryFailed(request, verb, 'waiting for', error);
    }
    connection = new HubConnection(armed, pid, onLost);
    if (died !== undefined) {
      connection.fail(died, 'dead');
      throw queryFailed(request, verb, 'waiting for', died);
    }
    return connection;
  }

  /** The connection a term's election runs on (its statements queue with the hub's own). */
  get connection(): PortConnection {
    return { query: (statement) => this.run(statement) };
  }

  /** Where the heartbeat asks: on this connection, or from another by pid (postgres.js). */
  get checksFromControl(): boolean {
    return this.#pinned.heartbeatOn === 'control';
  }

  /** Set once the connection failed: nothing more is sent on it. */
  get failed(): Error | undefined {
    return this.#failed;
  }

  /**
   * Runs `statement` after every statement sent before it; rejects once the connection failed, also
   * while the statement is in flight: a driver need not settle a query on a connection that died
   * under it (the chaos run saw a leader's election on Kysely over postgres.js wait for good after
   * its connection closed), and nothing that waits on this connection may wait on a dead one.
   */
  run(statement: Statement): Promise<readonly Row[]> {
    const next = this.#chain.then(() => {
      if (this.#failed !== undefined) throw this.#failed;
      return Promise.race([this.#pinned.query(statement), this.#failure]);
    });
    this.#chain = next.catch(() => undefined);
    return next;
  }

  /**
   * The heartbeat: the advisory locks this backend holds, within `ms`, as `tag:mode` (`tagOf(key)`,
   * then `x` or `s`). A port that checks from elsewhere (postgres.js, porsager/postgres#1208) asks
   * with `elsewhere` first, and writes to this connection only once that answered: the keepalive,
   * which also renews the lease and the server's idle clock. `marker` is `heldMarker`'s. `fresh`:
   * a slow answer from elsewhere is asked again (before a release: fresh-answer.ts).
   */
  async heldKeys(
    ms: number,
    elsewhere: (statement: Statement) => Promise<readonly Row[]>,
    marker: string,
    fresh = false,
  ): Promise<Set<string>> {
    const bound = this.checksFromControl ? Math.max(ms, MIN_CONTROL_CHECK_MS) : ms;
    const message = `the connection did not answer a heartbeat within ${bound} ms`;
    if (this.checksFromControl) {
      const ask = () => elsewhere(heldKeysStatement(this.pid, marker));
      const rows = await within(fresh ? freshAnswer(ask) : ask(), bound, message);
      if (rows.length === 0) return new Set();
    }
    const rows = await within(this.run(heldKeysStatement(undefined, marker)), bound, message);
    return new Set(rows.map((row) => `${String(cell(row, 't'))}:${String(cell(row, 'm'))}`));
  }

  /** Marks the connection failed (once) and tells its owner, who ends its terms and closes it. */
  fail(cause: Error, state: 'unknown' | 'dead'): void {
    if (this.#failed !== undefined) return;
    this.#failed = cause;
    this.#rejectFailure(cause);
    this.#onLost(this, cause, state);
  }

  /**
   * Gives the connection back: `'clean'` once it holds nothing (the lease's setting restored), else
   * the state the failure left. Idempotent; never rejects.
   */
  close(state: 'clean' | 'unknown' | 'dead', cause?: Error): Promise<void> {
    // A clean close waits for the statements before it; a failed connection is not waited on (its
    // last statement may never be answered).
    const before = state === 'clean' ? this.#chain : Promise.resolve();
    this.#closed ??= before.then(() => {
      this.#failed ??= new Error('the shared leader connection was closed');
      return Promise.resolve(this.#pinned.release(state, cause)).catch(() => undefined);
    });
    return this.#closed;
  }
}
