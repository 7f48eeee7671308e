import { acquireLocks, describeKeys } from './acquire-locks.ts';
import type { LockTrace } from './diagnostics.ts';
import { AdvisoryLockError, LockLostError } from './errors.ts';
import type { LockExecutor } from './lock-executor.ts';
import type { LockRequest } from './lock-options.ts';
import { releaseStatements } from './lock-statements.ts';

/**
 * Takes session-scoped lock(s) on a pinned connection, all or none. Resolves `true` when held and
 * `false` when not taken (anything taken part-way was released again, checked against
 * `pg_locks`). On any other rejection the connection's state is unknown: destroy it.
 *
 * @example
 * ```ts
 * import { acquireSessionLocks, lockRequest } from '@pglock/core';
 *
 * const held = await acquireSessionLocks(pinnedExecutor, lockRequest('leader', { timeoutMs: 0 }));
 * ```
 */
export function acquireSessionLocks(
  executor: LockExecutor,
  request: LockRequest,
  trace?: LockTrace,
): Promise<boolean> {
  return acquireLocks(executor, request, { scope: 'session', trace });
}

/**
 * Releases session lock(s) taken by {@link acquireSessionLocks} on the same connection. Throws
 * {@link LockLostError} when one was not held any more (the connection is not the one that took it,
 * as through a transaction-mode pooler); any rejection means the connection must be destroyed,
 * never returned to a pool.
 *
 * @example
 * ```ts
 * import { lockRequest, releaseSessionLocks } from '@pglock/core';
 *
 * await releaseSessionLocks(pinnedExecutor, lockRequest('leader'));
 * ```
 */
export async function releaseSessionLocks(
  executor: LockExecutor,
  request: Pick<LockRequest, 'keys' | 'shared'>,
  trace?: LockTrace,
): Promise<void> {
  let notHeld = 0;
  for (const stmt of releaseStatements(request.keys, request.shared)) {
    let rows: readonly Record<string, unknown>[];
    try {
      rows = await executor.query(stmt);
    } catch (cause) {
      throw new AdvisoryLockError(
        'LOCK_QUERY_FAILED',
        `Releasing the ${describeKeys(request)} failed in the database.`,
        {
          keys: request.keys,
          cause,
        },
      );
    }
    notHeld += rows.filter((row) => row.ok !== true).length;
  }
  if (notHeld > 0) {
    const lost = new LockLostError(
      `The session ${describeKeys(request)} was no longer held at release (${notHeld} not held): the connection lost it or is not the one that took it.`,
      { keys: request.keys },
    );
    trace?.lost(lost);
    throw lost;
  }
  trace?.released();
}
