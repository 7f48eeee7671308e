import { onAbort } from './abort-listeners.ts';
import { InvalidLockOptionsError, LockUsageError } from './errors.ts';
import { type LeaderHub, leaderHub } from './leader-hub.ts';
import { checkIdentity, electTerm } from './leader-identity.ts';
import { Lease, leaseTiming } from './leader-lease.ts';
import type { BigintLockKey, LockKey } from './lock-key.ts';
import { formatLockKey } from './lock-key.ts';
import { checkDuration } from './lock-options.ts';
import type { PortConnection } from './lock-port.ts';
import { contextFor, runInContext, runningIn } from './nesting.ts';
import { checkOptionKeys, LEADER_OPTION_KEYS } from './option-keys.ts';
import { jobKey } from './run-once.ts';
import { sessionContext } from './session-held.ts';
import { type SessionLock, type SessionScope, takeSessionLock } from './session-lock.ts';

/** What `onElected` gets: the term it leads, and the signal that ends it. */
export interface Election {
  /**
   * The fencing token: greater than every earlier term of this name. Pass it with every write the
   * leader makes elsewhere, and have the other side refuse a term lower than one it has seen.
   */
  readonly term: number;
  /**
   * Aborts when this term ends: with `LockLostError` as `reason` when the lock was lost (the
   * connection died, a heartbeat went unanswered, the lease ran out), with the callback's own error when it threw, and
   * with an `AbortError` after `stop()` or `resign()`. Stop the leader's work then.
   */
  readonly signal: AbortSignal;
}

/**
 * Options of `leader`.
 *
 * @example
 * ```ts
 * import type { LeaderOptions } from '@pglock/core';
 *
 * const options: LeaderOptions = {
 *   heartbeatMs: 500,
 *   onElected: ({ term, signal }) => {
 *     const timer = setInterval(() => console.log(`tick of term ${term}`), 1_000);
 *     signal.addEventListener('abort', () => clearInterval(timer));
 *   },
 *   onError: (error) => console.error('leader election', error),
 * };
 * ```
 */
export interface LeaderOptions {
  /**
   * Runs each time this process is elected. It may return at once (the term lasts until its signal
   * aborts) or run for the whole term; it must stop its work once `signal` aborts, since the next
   * campaign (and `stop()`) waits for its promise to settle. When it throws, the error goes to
   * `onError` and this process resigns, then campaigns again.
   */
  readonly onElected: (election: Election) => void | Promise<void>;
  /**
   * Gets what went wrong without ending the campaign: the callback's errors and failed campaigns
   * (`LockTableMissingError`, a database that cannot be reached). Default: `process.emitWarning`.
   */
  readonly onError?: ((error: unknown) => void) | undefined;
  /**
   * The longest a crashed, frozen (SIGSTOP, a GC pause, a paused VM) or silently cut leader keeps
   * leadership (ms, default 5000, at least 100). pglock sets `idle_session_timeout` to it on the
   * leader's own connection (PostgreSQL 14+), so the server ends a leader that stopped talking this
   * long after its last answered heartbeat, and the standby is elected at once; the leader's own
   * `signal` aborts with `LockLostError` no later than that. Raise it above your longest pause.
   */
  readonly leaseMs?: number | undefined;
  /**
   * The session lock's liveness check, which also renews the lease (ms; at most half of `leaseMs`;
   * default a third of it, at most 1000): a silent network cut ends the term within about two.
   */
  readonly heartbeatMs?: number | undefined;
  /** Mixed into the hash of the name, as for every lock. */
  readonly namespace?: string | undefined;
  /** Wait (ms, default 1000) before campaigning again after a term ended; doubled per failed campaign, up to 30 s. */
  readonly retryMs?: number | undefined;
  /**
   * Who leads, stored with each term in `pglock_jobs.identity` (what `currentLeader` and `pglock jobs`
   * show): a host name, a URL, a pod name; 1 to 256 characters. Default `host:pid` (`os.hostname()`
   * and `process.pid`).
   */
  readonly identity?: string | undefined;
}

/**
 * A running campaign for leadership of one name. It campaigns until `stop()`. The leaders of one
 * process share connections: a term is held on a connection shared with the process's other leaders
 * of the same database (and lease timing), or on the one it waited on. While another process leads,
 * the first two standbys of a process wait for the lock on the server, each on a connection of its
 * own; further standbys try their lock on the shared connection every 200 ms (at once when a leader
 * of the same process releases it). So a process uses at most 3 connections for its leaders,
 * whatever the number of names.
 */
export interface LeaderCampaign extends AsyncDisposable {
  readonly key: LockKey;
  /** True from election until the term's signal aborts. */
  readonly isLeader: boolean;
  /** The current term while leading, else `undefined`. */
  readonly term: number | undefined;
  /** What each of this campaign's terms stores as its identity (`identity`, or `host:pid`). */
  readonly identity: string;
  /**
   * Steps down and stays a candidate: the term's signal aborts, and once `onElected`'s promise has
   * settled the lock is released (a waiting standby is elected then); this process campaigns again
   * after `retryMs`. Resolves once the lock is released, at once when not leading. From inside
   * `onElected` it does not wait for that callback (which waits for it).
   */
  resign(): Promise<void>;
  /**
   * Ends the campaign: a wait is cancelled; a term's signal aborts, and once `onElected`'s promise
   * has settled the lock is released, so a standby is elected only after this leader's work stopped.
   * Resolves when all of that is done. Calling it again returns the same promise.
   */
  stop(): Promise<void>;
}

const DEFAULT_RETRY_MS = 1_000;
const MAX_RETRY_MS = 30_000;

/** `leader`: checks everything it can before any SQL, then starts the campaign. */
export function startLeader<Db>(
  scope: SessionScope<Db>,
  name: unknown,
  options: LeaderOptions | undefined,
  verb = 'leader',
): LeaderCampaign {
  const { port, db } = scope;
  if (typeof options !== 'object' || options === null) {
    throw new InvalidLockOptionsError(`${verb}: options must be an object with onElected.`);
  }
  checkOptionKeys(options, LEADER_OPTION_KEYS, verb);
  if (typeof options.onElected !== 'function') {
    throw new InvalidLockOptionsError(
      `${verb}: onElected must be a function; it runs while this process leads.`,
    );
  }
  if (options.onError !== undefined && typeof options.onError !== 'function') {
    throw new InvalidLockOptionsError(`${verb}: onError must be a function.`);
  }
  const { leaseMs, heartbeatMs } = leaseTiming(options, scope.defaults.heartbeatMs, verb);
  const retryMs = checkDuration(options.retryMs ?? DEFAULT_RETRY_MS, 'retryMs', verb, 0);
  const identity = checkIdentity(options.identity, verb);
  const key = jobKey(name, options.namespace ?? scope.defaults.namespace, verb);
  if (port.pin === undefined) {
    throw new LockUsageError(
      `${verb}: ${port.name} offers no session locks; a leader holds one for its whole term.`,
      {
        keys: [key],
      },
    );
  }
  if (port.cancellation(db) === 'none') {
    throw new LockUsageError(
      `${verb}: ${port.name} cannot interrupt a server-side wait on this database, so stop() could not end the campaign. Pass a pool.`,
      { keys: [key] },
    );
  }
  if (contextFor(db) !== undefined || port.connectionOf(db) !== undefined) {
    throw new LockUsageError(
      `${verb}: a leader pins a connection of its own, and was given a transaction. Pass the database (pool) itself.`,
      { keys: [key] },
    );
  }
  // Only the heartbeat of the factory's defaults applies: a campaign always waits without limit,
  // exclusively, until stop().
  const campaignScope: SessionScope<Db> = { port, db, defaults: { heartbeatMs } };
  return new Campaign(campaignScope as SessionScope<unknown>, key, options, retryMs, leaseMs, verb, identity);
}

type TermEnd = 'lost' | 'stopped' | 'resigned' | 'failed';

class Campaign implements LeaderCampaign {
  readonly key: BigintLockKey;
  readonly identity: string;
  readonly #scope: SessionScope<unknown>;
  readonly #onElected: LeaderOptions['onElected'];
  readonly #onError: LeaderOptions['onError'];
  readonly #retryMs: number;
  /** The lease of a term on a connection of its own. */
  readonly #lease: Lease;
  /** The leaders of this database that share connections with this one. */
  readonly #hub: LeaderHub;
  /** The lease the current term ends by: its own connection's, or the hub's shared one. */
  #termLease: Lease | undefined;
  readonly #verb: string;
  readonly #stop = new AbortController();
  readonly #done: Promise<void>;
  #term: AbortController | undefined;
  #termNumber: number | undefined;
  /** The running term's callback, and how `stop()` from inside it lets the term end without it. */
  #resignable: { readonly token: object; readonly resign: () => void } | undefined;
  /** Ends the running term by resignation; resolves once its lock is released. */
  #stepDown: (() => Promise<void>) | undefined;
  #identityMissingReported = false;

  constructor(
    scope: SessionScope<unknown>,
    key: BigintLockKey,
    options: LeaderOptions,
    retryMs: number,
    leaseMs: number,
    verb: string,
    identity: string,
  ) {
    this.key = key;
    this.identity = identity;
    this.#lease = new Lease(key, leaseMs, verb, (error) => this.#report(error));
    this.#hub = leaderHub(
      scope.port,
      scope.db,
      { leaseMs, heartbeatMs: scope.defaults.heartbeatMs ?? leaseMs / 3 },
      verb,
    );
    this.#scope = scope;
    this.#onElected = options.onElected;
    this.#onError = options.onError;
    this.#retryMs = retryMs;
    this.#verb = verb;
    // The campaign reports its own failures; nothing it does may become an unhandled rejection.
    this.#done = this.#campaign().catch((error: unknown) => this.#report(error));
  }

  get isLeader(): boolean {
    // Read from the lease's deadline too: a process frozen past it says false before its timer runs.
    return this.#term !== undefined && !this.#term.signal.aborted && !(this.#termLease?.expired() ?? true);
  }

  get term(): number | undefined {
    return this.isLeader ? this.#termNumber : undefined;
  }

  stop(): Promise<void> {
    // Called from the term's own onElected (directly, or from work it awaits): the callback is
    // resigning, so the term ends without waiting for it, which waits for this very call.
    const term = this.#resignable;
    if (term !== undefined && runningIn(term.token)) term.resign();
    this.#stop.abort();
    return this.#done;
  }

  resign(): Promise<void> {
    const term = this.#resignable;
    if (term !== undefined && runningIn(term.token)) term.resign();
    return this.#stepDown?.() ?? Promise.resolve();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  async #campaign(): Promise<void> {
    const stopped = this.#stop.signal;
    const leave = this.#hub.register((error) => this.#report(error));
    try {
      let failures = 0;
      while (!stopped.aborted) {
        let won: { lock: SessionLock; term: number; lease: Lease; dedicated: boolean } | undefined;
        try {
          won = await this.#win(stopped);
        } catch (error) {
          if (stopped.aborted) break;
          this.#report(error);
          // A pooler that cannot hold session locks, or a handle that cannot pin: the same every time.
          if (LockUsageError.is(error)) break;
          failures++;
          await sleep(backoff(this.#retryMs, failures), stopped);
          continue;
        }
        if (won === undefined) break;
        failures = 0;
        const end = await this.#lead(won.lock, won.term, won.lease);
        if (won.dedicated) this.#hub.freeDedicated(this.key);
        if (end === 'failed') failures++;
        await sleep(end === 'failed' ? backoff(this.#retryMs, failures) : this.#retryMs, stopped);
      }
    } finally {
      // The last campaign of the hub gives its shared connection back before stop() resolves.
      await leave();
    }
  }

  /**
   * Wins the lock (undefined once stopped): on the hub's shared connection when it is free; else
   * waiting on the server on a connection of its own while the hub has such a wait to give; else
   * polled on the shared connection (leader-hub.ts).
   */
  async #win(
    stopped: AbortSignal,
  ): Promise<{ lock: SessionLock; term: number; lease: Lease; dedicated: boolean } | undefined> {
    const elect = (connection: PortConnection) => this.#elect(connection);
    const shared = await this.#hub.claim(this.key, elect, stopped);
    if (shared !== undefined)
      return { lock: shared, term: shared.term, lease: this.#hub.lease(this.key), dedicated: false };
    if (stopped.aborted) return undefined;
    if (this.#hub.reserveDedicated()) {
      let term = 0;
      try {
        // The wait has no limit (the session's statement_timeout and lock_timeout are lifted for it)
        // and only stop() ends it; the term is written on the connection that holds the lock,
        // before the handle (and its heartbeat) exists.
        const lock = (await takeSessionLock(this.#scope, this.key, { signal: stopped }, false, this.#verb, {
          arm: (connection, alive) => this.#lease.arm(connection, alive),
          onHeld: async (connection) => {
            term = await this.#elect(connection);
          },
        })) as SessionLock;
        return { lock, term, lease: this.#lease, dedicated: true };
      } catch (error) {
        this.#hub.freeDedicated(this.key);
        throw error;
      }
    }
    const polled = await this.#hub.wait(this.key, elect, stopped);
    return polled === undefined
      ? undefined
      : { lock: polled, term: polled.term, lease: this.#hub.lease(this.key), dedicated: false };
  }

  #elect(connection: PortConnection): Promise<number> {
    return electTerm(connection, this.key, this.identity, this.#verb, (error) => {
      // Once per campaign: it leads on without an identity until the table is upgraded.
      if (!this.#identityMissingReported) this.#report(error);
      this.#identityMissingReported = true;
    });
  }

  /** One term: from election until the lock is lost, the callback throws, or stop(). */
  async #lead(lock: SessionLock, term: number, lease: Lease): Promise<TermEnd> {
    const controller = new AbortController();
    this.#term = controller;
    this.#termLease = lease;
    this.#termNumber = term;
    let end: TermEnd | undefined;
    let settle!: () => void;
    const ended = new Promise<void>((resolve) => {
      settle = resolve;
    });
    // The term's signal aborts in the same tick as what ended it, so `isLeader` is never stale.
    const finish = (why: TermEnd, reason?: unknown): void => {
      if (end !== undefined) return;
      end = why;
      if (why === 'stopped' || why === 'resigned') controller.abort();
      else controller.abort(reason);
      settle();
    };
    const unsubscribe = [
      whenAborted(lock.signal, () => finish('lost', lock.signal.reason)),
      whenAborted(this.#stop.signal, () => finish('stopped')),
      lease.watch(() => finish('lost', lease.lostError(this.key))),
    ];
    let resign!: () => void;
    const resigned = new Promise<void>((resolve) => {
      resign = resolve;
    });
    const token = {};
    this.#resignable = { token, resign };
    let released!: () => void;
    const free = new Promise<void>((resolve) => {
      released = resolve;
    });
    this.#stepDown = () => {
      finish('resigned');
      return free;
    };
    // The callback runs in a context that names the term (for stop() from inside it) and what its
    // session holds (a lock call from there for the leader's own key would wait for itself).
    const context = sessionContext(lock, token);
    const elected = async (election: Election): Promise<void> => this.#onElected(election);
    const election: Election = { term, signal: controller.signal };
    // A term that ended before it began (lost or stopped as it was won) runs no callback.
    const task =
      end !== undefined
        ? Promise.resolve()
        : (context === undefined ? elected(election) : runInContext(context, elected, election)).then(
            () => undefined,
            (error: unknown) => {
              // Rethrowing the signal's reason (signal.throwIfAborted()) is stopping as asked, not a failure.
              if (controller.signal.aborted && error === controller.signal.reason) return;
              this.#report(error);
              finish('failed', error);
            },
          );
    await ended;
    for (const off of unsubscribe) off();
    // The work stops before the lock is given up: a standby is elected only after it. A callback
    // that called stop() itself has said its work is done.
    await Promise.race([task, resigned]);
    this.#resignable = undefined;
    await lock.release().catch(() => undefined);
    this.#stepDown = undefined;
    released();
    return end as TermEnd;
  }

  #report(error: unknown): void {
    try {
      if (this.#onError !== undefined) this.#onError(error);
      else {
        const detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
        process.emitWarning(
          `${this.#verb} ${formatLockKey(this.key)}: ${detail} (pass onError to handle it).`,
          'PglockWarning',
        );
      }
    } catch {
      // A throwing onError must not end the campaign, nor surface as an unhandled rejection.
    }
  }
}

/** Calls `listener` once `signal` aborts, also when it already has; returns the unsubscribe. */
function whenAborted(signal: AbortSignal, listener: () => void): () => void {
  if (signal.aborted) {
    listener();
    return () => undefined;
  }
  return onAbort(signal, listener);
}

function backoff(retryMs: number, failures: number): number {
  return Math.min(Math.max(retryMs, 1) * 2 ** (failures - 1), Math.max(retryMs, MAX_RETRY_MS));
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted || ms === 0) return resolve();
    const off = onAbort(signal, () => {
      clearTimeout(timer);
      resolve();
    });
    const timer = setTimeout(() => {
      off();
      resolve();
    }, ms);
  });
}
