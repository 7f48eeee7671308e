import { type Acquisition, acquire, isConnectionFailure, waitUnlimited } from './acquire.ts';
import { backendAliveStatement, identifyBackendStatement } from './backend-statements.ts';
import { assertCancellable, cancellerFor } from './cancel-wait.ts';
import { silentTrace, startTrace, type Trace } from './diagnostics.ts';
import { InvalidLockOptionsError, LockAbortedError, LockLostError, LockUsageError } from './errors.ts';
import type { LockKey } from './lock-key.ts';
import { checkDuration, type LockOptions, type LockTarget, lockRequest } from './lock-options.ts';
import type { LockPort, PinnedConnection, PortConnection } from './lock-port.ts';
import { abortedError, describeKeys, heldBySessionError, notAcquiredError, queryFailed } from './messages.ts';
import { contextFor, heldBySession, runInContext } from './nesting.ts';
import { SESSION_LOCK_OPTION_KEYS } from './option-keys.ts';
import { CHANGING_BACKENDS, pinnedBackend, refuseSession } from './pooler-check.ts';
import { cell } from './row-cell.ts';
import { asError, HeldSessionLock, sessionContext } from './session-held.ts';
import { sessionHub } from './session-hub.ts';
import { pinFailed, STALE_RETRIES, staleConnection, staleRetryPause } from './stale-connection.ts';
import { requestBound } from './start-bound.ts';

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
   * within about two intervals. Time this process was not running (a long synchronous task, a loaded
   * machine) is not held against the server: an answer that arrived meanwhile counts, and a stall
   * of more than half the interval gives the check up to one interval more.
   */
  readonly heartbeatMs?: number | undefined;
  /**
   * Where the lock is held. `'shared'` (the default): on a connection the session locks of this
   * process share on this database (with the same `heartbeatMs`), tried there first; a key that is
   * taken, or that this process already holds, is waited for on a connection of its own, and held
   * there. `'dedicated'`: always on a connection of its own, so that no other lock shares its fate
   * (a terminated backend loses every lock on it). Leaders share connections their own way.
   */
  readonly connection?: SessionConnection | undefined;
}

/**
 * How a session lock holds its connection: shared with the other session locks of the process, or
 * its own. See {@link SessionLockOptions.connection}.
 *
 * @example
 * ```ts
 * import type { SessionConnection } from '@pglock/core';
 *
 * const connection: SessionConnection = 'dedicated';
 * ```
 */
export type SessionConnection = 'shared' | 'dedicated';

/** The session connection modes, as validated. */
export const SESSION_CONNECTIONS: readonly SessionConnection[] = Object.freeze(['shared', 'dedicated']);

/**
 * `value` as a session connection mode, else InvalidLockOptionsError naming the option and `verb`.
 *
 * @example
 * ```ts
 * import { checkSessionConnection } from './session-lock.ts';
 *
 * checkSessionConnection(undefined, 'acquireSessionLock'); // 'shared'
 * ```
 */
export function checkSessionConnection(value: unknown, verb: string): SessionConnection {
  if (value === undefined) return 'shared';
  if (value === 'shared' || value === 'dedicated') return value;
  throw new InvalidLockOptionsError(
    `${verb}: connection must be 'shared' or 'dedicated' (got ${typeof value === 'string' ? `'${value}'` : String(value)}).`,
  );
}

/**
 * A held session lock, on the connection the session locks of the process share or on one of its
 * own (`connection` option). `await using` releases it at the end of the block.
 */
export interface SessionLock extends AsyncDisposable {
  readonly keys: readonly LockKey[];
  /** The first (or only) key. */
  readonly key: LockKey;
  /** Backend pid of the connection holding the lock (shared locks of a process have the same one). */
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
  /**
   * Runs on the pinned connection before the wait and returns the connection used from then on
   * (the leader's lease sets the server's side there and watches it: leader-lease.ts). `alive` asks
   * from another connection whether the pinned backend still exists.
   */
  arm?(connection: PinnedConnection, alive: () => Promise<boolean>): Promise<PinnedConnection>;
  /** Runs on the pinned connection once the lock is held (the term is written there). */
  onHeld(connection: PortConnection): Promise<void>;
}

export const DEFAULT_HEARTBEAT_MS = 1_000;

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

  const given = options?.connection;
  const mode = checkSessionConnection(given === undefined ? defaults.connection : given, verb);
  // A campaign's wait is its own (leader-hub.ts shares a leader's connections).
  let shared: Trace | undefined;
  if (campaign === undefined && mode === 'shared') {
    shared = startTrace(request, 'session');
    shared.requested();
    let outcome: Awaited<ReturnType<ReturnType<typeof sessionHub>['take']>>;
    try {
      outcome = await sessionHub(port, db, heartbeatMs).take(request, verb, deadline, shared);
    } catch (error) {
      shared.notAcquired(LockAbortedError.is(error) ? 'aborted' : 'error', error);
      throw error;
    }
    if (typeof outcome === 'object') {
      shared.acquired();
      return outcome;
    }
    const final =
      outcome === 'late' ? 'timeout' : outcome === 'busy' && request.timeoutMs === 0 ? 'busy' : undefined;
    if (final !== undefined) {
      shared.notAcquired(final);
      if (attempt) return undefined;
      throw notAcquiredError(request, verb);
    }
  }

  let died: unknown;
  let holder: HeldSessionLock | undefined;
  let pinned: PinnedConnection;
  let pid: number;
  for (let round = 0; ; round++) {
    if (round > 0) await staleRetryPause(deadline);
    // Each round's connection reports its own death: a first one given back dead says nothing of
    // the second.
    let current = true;
    const pinning = pin(db, (cause) => {
      if (!current) return;
      died ??= cause ?? new Error('the connection ended');
      holder?.lose(died, 'dead');
    });
    // The pool's wait for a connection comes out of the lock's budget, and the signal ends it, as
    // the start of withLock's transaction does: an exhausted pool must not keep the caller past
    // either (nor keep a campaign from stopping). A connection that arrives after the caller gave up
    // holds nothing of this call: it goes straight back.
    const bound = requestBound(request, verb, deadline, () => NOT_IN_TIME);
    let candidate: PinnedConnection;
    try {
      candidate = bound === undefined ? await pinning : await bound.wait(pinning, handBack);
    } catch (error) {
      if (error !== NOT_IN_TIME) {
        // A pool that hands out a dead connection may fail the pin itself (a driver that checks the
        // connection as it pins it): another is taken, as below.
        if (round < STALE_RETRIES && staleConnection(error)) {
          current = false;
          died = undefined;
          continue;
        }
        const failure = pinFailed(request, verb, error);
        shared?.notAcquired(LockAbortedError.is(failure) ? 'aborted' : 'error', failure);
        throw failure;
      }
      shared?.notAcquired('timeout');
      if (attempt) return undefined;
      throw notAcquiredError(request, verb);
    }
    // The backend is checked before the lock is taken (issue 12 A1, found by the kit's "two
    // instances trying at once" test): through a transaction-mode pooler the unlock of a lock
    // refused after it was taken can land on another server backend, leaving the lock held on a
    // pooled server connection that no client owns.
    try {
      pid = await pinnedBackend(port, db, candidate, request, verb, () => died !== undefined);
      pinned = candidate;
      break;
    } catch (error) {
      // The pool handed out a connection whose backend had ended while it sat idle there: it went
      // back as dead, and nothing was taken on it (stale-connection.ts).
      if (round >= STALE_RETRIES || !staleConnection(error)) {
        shared?.notAcquired('error', error);
        throw error;
      }
      current = false;
      died = undefined;
    }
  }
  if (campaign?.arm !== undefined) {
    try {
      const alive = () =>
        port.query(db, backendAliveStatement(pid)).then(([row]) => Number(cell(row ?? {}, 'alive')) > 0);
      pinned = await campaign.arm(pinned, alive);
    } catch (error) {
      await pinned.release(died !== undefined ? 'dead' : 'unknown', asError(error));
      throw queryFailed(request, verb, 'waiting for', error);
    }
  }
  // Tried on the shared connection first, the call was reported as requested there already.
  const trace = shared === undefined ? startTrace(request, 'session') : continued(shared);
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
    const [row] = await pinned.query(identifyBackendStatement);
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

/** `trace` without its `requested` event, for a call that goes on after a try elsewhere. */
function continued(trace: Trace): Trace {
  if (trace === silentTrace) return trace;
  return {
    requested() {},
    acquired: () => trace.acquired(),
    notAcquired: (reason, error) => trace.notAcquired(reason, error),
    released: () => trace.released(),
    lost: (error) => trace.lost(error),
  };
}

/** What a pool wait that outlasted the budget rejects with, inside this module only. */
const NOT_IN_TIME = Symbol('pglock.notInTime');

/** Gives back, unused, a connection that was pinned after its caller had given up on it. */
function handBack(late: PinnedConnection): void {
  Promise.resolve()
    .then(() => late.release('clean'))
    .catch(() => undefined);
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
