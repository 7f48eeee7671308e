import { isConnectionLoss } from './acquire.ts';
import { AdvisoryLockError, LockQueryError } from './errors.ts';
import type { LockRequest } from './lock-options.ts';
import { queryFailed } from './messages.ts';

// A pool can hand out a connection whose backend ended while it sat idle there (terminated, or the
// server restarted), before the driver noticed: the first statement on it fails. Nothing was taken
// on it yet, so a session lock (shared or dedicated) takes another. A pool may hand the same dead
// connection out once more before it notices (node-postgres's Pool takes back a client that got
// the server's 57P01 before its socket closed), and a server restart leaves several: a few rounds.
// Each round waits a moment first: postgres.js drops a `reserve()` that is queued when a connection
// closes (porsager/postgres#1195), and the dead connection's close may come just after its error.

/** How many more connections a session lock takes after one its pool handed out dead. */
export const STALE_RETRIES = 3;

/** How long a round waits before it takes another connection (see above), at most. */
export const STALE_PAUSE_MS = 100;

/**
 * Waits before the next round: {@link STALE_PAUSE_MS}, less when the call's budget ends sooner.
 *
 * @example
 * ```ts
 * import { staleRetryPause } from './stale-connection.ts';
 *
 * await staleRetryPause(performance.now() + 50); // about 50 ms
 * ```
 */
export function staleRetryPause(deadline: number | undefined): Promise<void> {
  const ms = deadline === undefined ? STALE_PAUSE_MS : Math.min(STALE_PAUSE_MS, deadline - performance.now());
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

/**
 * Whether a failure to pin or check a pooled connection says the pool handed out a dead one (the
 * driver's error, or a LockQueryError over it), so that another may be taken.
 *
 * @example
 * ```ts
 * import { staleConnection } from './stale-connection.ts';
 *
 * staleConnection(Object.assign(new Error('terminating connection'), { code: '57P01' })); // true
 * ```
 */
export function staleConnection(error: unknown): boolean {
  const cause = LockQueryError.is(error) ? error.cause : error;
  return !AdvisoryLockError.is(cause) && isConnectionLoss(cause);
}

/**
 * A failure of the driver while it handed out and pinned a connection, as the typed error a session
 * lock rejects with (pglock's own errors go through as they are).
 *
 * @example
 * ```ts
 * import { pinFailed } from './stale-connection.ts';
 *
 * throw pinFailed(request, 'acquireSessionLock', new Error('read ECONNRESET'));
 * ```
 */
export function pinFailed(request: Pick<LockRequest, 'keys'>, verb: string, error: unknown): unknown {
  return AdvisoryLockError.is(error) ? error : queryFailed(request, verb, 'taking a connection for', error);
}
