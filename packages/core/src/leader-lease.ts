import { isConnectionLoss } from './acquire.ts';
import { InvalidLockOptionsError, LockLostError, LockUsageError } from './errors.ts';
import type { BigintLockKey } from './lock-key.ts';
import { formatLockKey } from './lock-key.ts';
import { checkDuration } from './lock-options.ts';
import type { PinnedConnection, Row } from './lock-port.ts';
import { cell } from './row-cell.ts';
import { within } from './run-cancellable.ts';
import { sqlStateOf } from './sql-state.ts';
import { statementText } from './statement.ts';

// A leader's lease: how long a crashed, frozen or silently cut leader keeps leadership, bounded by
// pglock on its own connection whatever the server's settings (docs/scheduling.md, "The lease").
//
// The server side: before the campaign's wait, the pinned connection's `idle_session_timeout` is set
// to leaseMs (PostgreSQL 14+). A waiting backend runs a statement, so the timeout never ends a
// standby; once the lock is granted the leader's heartbeat keeps the session busy every heartbeatMs,
// and a leader that stops sending (SIGSTOP, a crash, a cut network) is ended by the server leaseMs
// after its last answer: its lock is freed and the standby, waiting server-side, is elected at once.
// Set before the wait rather than after the grant, so no moment of a term is unbounded.
//
// The leader's side: the term ends locally (`signal` aborts with LockLostError, `isLeader` turns
// false) at the send time of the last answered statement on the pinned connection plus leaseMs. The
// server's idle clock starts when it has answered that statement, after it was sent, so the local
// deadline is never later than the server's end of the session, and so no later than the moment a
// standby can be elected.

/** The lease when `leaseMs` is omitted: a few heartbeats' worth, above a GC pause or a slow answer. */
export const DEFAULT_LEASE_MS = 5_000;
/** Below this a lease is shorter than a loaded machine's scheduling delays. */
const MIN_LEASE_MS = 100;
/** The default heartbeat's ceiling (the session locks' default). */
const MAX_DEFAULT_HEARTBEAT_MS = 1_000;
/** How long restoring the setting may take at release before the connection is not handed back clean. */
const RESTORE_MS = 2_000;

/** `leaseMs` and the heartbeat that keeps it, checked before any SQL. */
export interface LeaseTiming {
  readonly leaseMs: number;
  readonly heartbeatMs: number;
}

/**
 * Checks `leaseMs` and the heartbeat against it: an explicit `heartbeatMs` must be at most half the
 * lease (two renewals per lease at least); an omitted one is the factory's (or 1000), capped at a
 * third of the lease.
 *
 * @example
 * ```ts
 * import { leaseTiming } from './leader-lease.ts';
 *
 * leaseTiming({ leaseMs: 1_500 }, undefined, 'leader'); // { leaseMs: 1500, heartbeatMs: 500 }
 * ```
 */
export function leaseTiming(
  options: { readonly leaseMs?: unknown; readonly heartbeatMs?: unknown },
  factoryHeartbeatMs: number | undefined,
  verb: string,
): LeaseTiming {
  const leaseMs = checkDuration(options.leaseMs ?? DEFAULT_LEASE_MS, 'leaseMs', verb, MIN_LEASE_MS);
  if (options.heartbeatMs === undefined) {
    const derived = Math.floor(leaseMs / 3);
    const heartbeatMs = Math.min(factoryHeartbeatMs ?? MAX_DEFAULT_HEARTBEAT_MS, derived);
    return { leaseMs, heartbeatMs: checkDuration(heartbeatMs, 'heartbeatMs', verb, 10) };
  }
  const heartbeatMs = checkDuration(options.heartbeatMs, 'heartbeatMs', verb, 10);
  if (heartbeatMs * 2 > leaseMs) {
    throw new InvalidLockOptionsError(
      `${verb}: heartbeatMs (${heartbeatMs}) must be at most half of leaseMs (${leaseMs}): each heartbeat renews the lease, and a term would otherwise end between two of them. Omit heartbeatMs to derive it (a third of leaseMs, at most 1000).`,
    );
  }
  return { leaseMs, heartbeatMs };
}

// Read in FROM, the saved value exists before the select list sets the new one. `missing_ok`:
// PostgreSQL before 14 has no such setting, and the statement then sets nothing (saved is NULL).
// A shorter idle_session_timeout the connection has already (a role's or a pool's, as older docs
// advised) is kept: it bounds failover further, and the local deadline follows it (`effective`).
const armStatement = statementText(
  "SELECT p.saved, e.ms::text AS effective, CASE WHEN p.saved IS NULL THEN NULL ELSE set_config('idle_session_timeout', e.ms::text, false) END AS lease " +
    "FROM (SELECT $1::text::bigint AS want) AS w CROSS JOIN ROWS FROM (current_setting('idle_session_timeout', true)) AS p(saved) " +
    'CROSS JOIN LATERAL (SELECT CASE WHEN s.ms > 0 AND s.ms < w.want THEN s.ms ELSE w.want END AS ms ' +
    "FROM (SELECT (SELECT setting::bigint FROM pg_settings WHERE name = 'idle_session_timeout') AS ms) AS s) AS e",
);
const restoreStatement = statementText(
  "SELECT set_config('idle_session_timeout', $1::text, false) AS idle_session_timeout",
);

/**
 * One campaign's lease: arms the server side on each pinned connection, watches the statements
 * answered there, and says when the term must end.
 *
 * @example
 * ```ts
 * import { Lease } from './leader-lease.ts';
 *
 * const lease = new Lease(key, 1_500, 'leader', report);
 * const pinned = await lease.arm(connection, alive); // before the campaign's wait
 * lease.expired(); // false while the heartbeat is answered
 * ```
 */
export class Lease {
  readonly leaseMs: number;
  readonly #key: BigintLockKey;
  readonly #verb: string;
  readonly #report: (error: unknown) => void;
  #reportedUnsupported = false;
  /** The lease of the current pin: `leaseMs`, or the connection's own shorter idle_session_timeout. */
  #effectiveMs: number;
  /** `performance.now()` at which the last answered statement on the pinned connection was sent. */
  #renewedAt = Number.NEGATIVE_INFINITY;

  constructor(key: BigintLockKey, leaseMs: number, verb: string, report: (error: unknown) => void) {
    this.#key = key;
    this.leaseMs = leaseMs;
    this.#effectiveMs = leaseMs;
    this.#verb = verb;
    this.#report = report;
  }

  /** The local end of the term: never later than the server's end of the session. */
  get deadline(): number {
    return this.#renewedAt + this.#effectiveMs;
  }

  expired(): boolean {
    return performance.now() >= this.deadline;
  }

  /**
   * Calls `onExpired` once the lease has run out (at once when it has), re-arming its timer while
   * answered statements renew it; returns the unsubscribe. A process that was frozen past the
   * deadline runs this timer first on waking (timers run before I/O callbacks in Node's loop).
   */
  watch(onExpired: () => void): () => void {
    let timer: NodeJS.Timeout | undefined;
    const check = (): void => {
      const left = this.deadline - performance.now();
      if (left <= 0) {
        onExpired();
        return;
      }
      timer = setTimeout(check, Math.ceil(left));
      // Like the heartbeat's timer: a campaign alone does not keep the process running.
      timer.unref();
    };
    check();
    return () => clearTimeout(timer);
  }

  /** The reason a term ends with when its lease ran out (`key`: the term's, on a shared connection). */
  lostError(key: BigintLockKey = this.#key): LockLostError {
    return new LockLostError(
      `${this.#verb} ${formatLockKey(key)}: the lease of ${this.#effectiveMs} ms ran out (no statement on the leader's connection was answered in time; the process may have been frozen). The server ends that session by then, and a standby may be elected.`,
      { keys: [key] },
    );
  }

  /**
   * Sets the server side on `pinned` and returns the connection the campaign uses instead: it
   * renews the lease with each answered statement and restores the setting before the connection
   * goes back to its pool. On PostgreSQL before 14 it reports once that only the local lease
   * applies, and returns `pinned` watched but unchanged.
   */
  async arm(pinned: PinnedConnection, alive: () => Promise<boolean>): Promise<PinnedConnection> {
    this.#renewedAt = Number.NEGATIVE_INFINITY;
    const [row] = await pinned.query(armStatement.bind([String(this.leaseMs)]));
    const saved = cell(row ?? {}, 'saved');
    const effective = Number(cell(row ?? {}, 'effective'));
    this.#effectiveMs = Number.isSafeInteger(effective) && effective > 0 ? effective : this.leaseMs;
    if (saved === null || saved === undefined) this.#unsupported();
    return this.#watch(pinned, saved === null || saved === undefined ? undefined : String(saved), alive);
  }

  #unsupported(): void {
    if (this.#reportedUnsupported) return;
    this.#reportedUnsupported = true;
    this.#report(
      new LockUsageError(
        `${this.#verb} ${formatLockKey(this.#key)}: this PostgreSQL has no idle_session_timeout (it came in 14), so the server cannot end a frozen or silently cut leader's session after leaseMs. The leader's own term still ends after leaseMs without an answered heartbeat, but a standby is elected only once the server notices the dead connection: set tcp_keepalives_idle, tcp_keepalives_interval and tcp_keepalives_count (docs/scheduling.md). The campaign goes on.`,
        { keys: [this.#key] },
      ),
    );
  }

  #watch(
    pinned: PinnedConnection,
    saved: string | undefined,
    alive: () => Promise<boolean>,
  ): PinnedConnection {
    const query = (statement: Parameters<PinnedConnection['query']>[0]): Promise<readonly Row[]> => {
      const sentAt = performance.now();
      return pinned.query(statement).then((rows) => {
        if (sentAt > this.#renewedAt) this.#renewedAt = sentAt;
        return rows;
      });
    };
    // Never throws: the connection's release must follow whatever happens here.
    const restore = async (state: 'clean' | 'unknown' | 'dead'): Promise<'clean' | 'unknown' | 'dead'> => {
      if (state === 'dead' || saved === undefined) return state;
      try {
        // A port that checks from elsewhere must not have its pin written to once it may have
        // failed (postgres.js, porsager/postgres#1208): the restore waits for another connection's word.
        if (state === 'unknown' && pinned.heartbeatOn === 'control') {
          if (!(await within(Promise.resolve().then(alive), RESTORE_MS, 'no answer'))) return state;
        }
        const restoring = Promise.resolve().then(() => pinned.query(restoreStatement.bind([saved])));
        await within(restoring, RESTORE_MS, 'no answer');
        return state;
      } catch (error) {
        // A connection that keeps the lease's timeout must not serve the pool's next caller as clean:
        // 'dead' when the server said it ended the session, else 'unknown' (the port makes sure).
        return sqlStateOf(error) !== undefined && isConnectionLoss(error) ? 'dead' : 'unknown';
      }
    };
    const cancel = pinned.cancel;
    const transactionStatus = pinned.transactionStatus;
    return {
      query,
      get heartbeatOn() {
        return pinned.heartbeatOn;
      },
      get processID() {
        return pinned.processID;
      },
      get reportsFailedCommit() {
        return pinned.reportsFailedCommit;
      },
      ...(cancel === undefined ? {} : { cancel: () => cancel.call(pinned) }),
      ...(transactionStatus === undefined ? {} : { transactionStatus: () => transactionStatus.call(pinned) }),
      release: async (state, cause) => pinned.release(await restore(state), cause),
    };
  }
}
