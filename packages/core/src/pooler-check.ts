import { LockUsageError } from './errors.ts';
import type { LockRequest } from './lock-options.ts';
import type { ControlConnection, LockPort, PinnedConnection } from './lock-port.ts';
import { backendPidStatement, sessionUnlockStatements } from './lock-statements.ts';
import { describeKeys, queryFailed } from './messages.ts';
import { cell } from './row-cell.ts';
import { within } from './run-cancellable.ts';
import { asError } from './session-held.ts';

// The pooler check: a session lock is refused on a connection whose statements may run on
// changing server backends (a transaction-mode pooler).

const PROBE_TIMEOUT_MS = 2_000;
/** Looks of the pooler check (two round trips each, only through a pooler). */
const PROBE_ROUNDS = 8;

/**
 * A session lock needs one server backend for its whole life. Straight to PostgreSQL the driver's
 * cancel-key pid is the backend pid, and that settles it. Through a pooler the key is the pooler's,
 * so probe from another connection: in session mode it gets another backend and ours stays; in
 * transaction mode it is handed the very backend we just used (PgBouncer reuses the last idle one),
 * or our own next statement lands elsewhere. No second connection within the probe timeout means
 * "could not check", which refuses too: a lock that may be shared must never be accepted.
 */
export async function assertStableBackend<Db>(
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

export const CHANGING_BACKENDS =
  'its statements run on changing server backends (a transaction-mode pooler, e.g. PgBouncer pool_mode = transaction)';

/** Gives the pinned connection up (unlocking first when `locked`) and throws the refusal. */
export async function refuseSession(
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
  throw sessionRefusal(request, verb, reason, !locked ? 'nothing' : released ? 'released' : 'closed');
}

/**
 * The LockUsageError of a session lock refused because its connection's statements may run on
 * changing server backends; `outcome` says what became of what it had locked.
 *
 * @example
 * ```ts
 * import { CHANGING_BACKENDS, sessionRefusal } from './pooler-check.ts';
 *
 * throw sessionRefusal(request, 'acquireSessionLock', CHANGING_BACKENDS, 'nothing');
 * ```
 */
export function sessionRefusal(
  request: LockRequest,
  verb: string,
  reason: string,
  outcome: 'nothing' | 'released' | 'closed',
): LockUsageError {
  return new LockUsageError(
    `${verb}: the session ${describeKeys(request)} cannot be held through this connection: ${reason}, so an unlock or a heartbeat could land on another backend and two holders could both believe they hold it. ` +
      'Use withLock (transaction-scoped locks work through transaction pooling), or take session locks on a direct connection or through a session-mode pool. ' +
      (outcome === 'nothing'
        ? 'Nothing was locked.'
        : outcome === 'released'
          ? 'The lock was released.'
          : 'The connection was closed, which releases the lock.'),
    { keys: request.keys },
  );
}

/**
 * The backend pid of a connection pinned for a session lock, checked by {@link assertStableBackend}
 * before any lock is taken on it. When that fails, the connection is given back (`'dead'` once
 * `died()` says its driver saw it end, else `'unknown'`) and the error is a LockQueryError; a
 * refused pooler is its own LockUsageError, the refusal having closed the connection already.
 *
 * @example
 * ```ts
 * import { pinnedBackend } from './pooler-check.ts';
 *
 * const pid = await pinnedBackend(port, db, pinned, request, 'acquireSessionLock', () => died !== undefined);
 * ```
 */
export async function pinnedBackend<Db>(
  port: LockPort<Db, unknown>,
  db: Db,
  pinned: PinnedConnection,
  request: LockRequest,
  verb: string,
  died: () => boolean,
): Promise<number> {
  try {
    const [row] = await pinned.query(backendPidStatement);
    const pid = Number(cell(row ?? {}, 'pid'));
    if (!Number.isInteger(pid)) throw new Error('pg_backend_pid() gave no pid');
    await assertStableBackend(port, db, pinned, pid, request, verb, false);
    return pid;
  } catch (error) {
    if (LockUsageError.is(error)) throw error;
    await Promise.resolve(pinned.release(died() ? 'dead' : 'unknown', asError(error))).catch(() => undefined);
    throw queryFailed(request, verb, 'checking', error);
  }
}
