import {
  LockAbortedError,
  LockLostError,
  LockNotAcquiredError,
  LockQueryError,
  LockUsageError,
} from './errors.ts';
import { formatLockKey, type LockKey } from './lock-key.ts';
import type { LockRequest } from './lock-options.ts';

/** "lock \"job\"" or "3 locks (\"a\", \"b\", 42)", for messages. */
export function describeKeys(request: Pick<LockRequest, 'keys'>): string {
  const labels = request.keys.map(formatLockKey);
  return labels.length === 1 ? `lock ${labels[0]}` : `${labels.length} locks (${labels.join(', ')})`;
}

// What to call instead when busy should mean "skip", per function the user called.
const SKIP_INSTEAD: Record<string, string> = {
  withLock: 'tryWithLock',
  $withLock: '$tryWithLock',
  lock: 'tryLock',
  acquireSessionLock: 'tryAcquireSessionLock',
  withSessionLock: 'tryAcquireSessionLock',
};

/**
 * The error for a lock that was not taken: it names the function called, what happened, and what to
 * do next.
 */
export function notAcquiredError(request: LockRequest, verb: string): LockNotAcquiredError {
  const { timeoutMs } = request;
  const how =
    timeoutMs === 0
      ? 'is held by another session (tried once, timeoutMs: 0)'
      : timeoutMs === undefined
        ? "was not granted before the server's lock_timeout elapsed"
        : `was not granted within ${timeoutMs} ms`;
  const skip = SKIP_INSTEAD[verb];
  const next =
    timeoutMs === 0
      ? 'Retry later, or pass timeoutMs to wait for it.'
      : `Retry later, raise timeoutMs${skip ? `, or use ${skip} to skip when busy` : ''}.`;
  return new LockNotAcquiredError(`${verb}: the ${describeKeys(request)} ${how}. ${next}`, {
    keys: request.keys,
    timeoutMs,
  });
}

/** The error for a wait the caller's signal ended; `held` when the lock stays held in the caller's transaction. */
export function abortedError(
  request: LockRequest,
  verb: string,
  reason: unknown,
  cause?: unknown,
  held = false,
): LockAbortedError {
  const what = held
    ? 'the lock was granted as the abort landed, and stays held until your transaction ends (roll it back to release it now)'
    : 'nothing was left locked';
  return new LockAbortedError(
    `${verb}: waiting for the ${describeKeys(request)} was aborted by the caller's signal; ${what}.`,
    { keys: request.keys, reason, cause: cause ?? reason, held },
  );
}

/** A statement failed in the database for a reason other than the lock. */
export function queryFailed(
  request: Pick<LockRequest, 'keys'>,
  verb: string,
  doing: string,
  cause: unknown,
): LockQueryError {
  const detail = cause instanceof Error ? `: ${cause.message}` : '';
  return new LockQueryError(
    `${verb}: ${doing} the ${describeKeys(request)} failed in the database${detail}`,
    {
      keys: request.keys,
      cause,
    },
  );
}

/**
 * A lock call inside a `withSessionLock` callback for `key`, which that callback's session holds: it
 * would wait for itself (see `heldBySession`), so it is refused before any SQL.
 */
export function heldBySessionError(request: LockRequest, verb: string, key: LockKey): LockUsageError {
  return new LockUsageError(
    `${verb}: the lock ${formatLockKey(key)} is held by the running withSessionLock callback's session; this call would wait on another connection for that session, which never ends while the callback waits. The callback already holds it: do the work without a second lock, or pass every key to one call.`,
    { keys: request.keys },
  );
}

/**
 * What a held session lock's `signal` aborts with once it is lost (its connection died, a heartbeat
 * went unanswered, its backend no longer holds it): `cause` is why.
 *
 * @example
 * ```ts
 * import { sessionLostError } from './messages.ts';
 *
 * controller.abort(sessionLostError(request, new Error('backend 42 no longer holds it')));
 * ```
 */
export function sessionLostError(request: Pick<LockRequest, 'keys'>, cause: unknown): LockLostError {
  const detail = cause instanceof Error ? cause.message : String(cause);
  return new LockLostError(`The session ${describeKeys(request)} was lost: ${detail}.`, {
    keys: request.keys,
    cause,
  });
}
