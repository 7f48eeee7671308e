import { holdSessionLock, holdsLock, type LockRequest, type LockTrace, type SessionLock } from '@pglock/core';
import { pgExecutor } from './pg-executor.ts';
import type { PgPoolClientLike } from './pg-types.ts';

/**
 * core's session-lock handle over one checked-out node-postgres client. The heartbeat asks the
 * server whether *this connection's backend* still holds the lock (not just whether the socket
 * answers), so a backend swapped underneath by a pooler counts as a loss too; the client's `error`
 * and `end` events report a terminated backend or a closed socket at once. A lost or failed
 * connection is destroyed (`release(error)`), never returned to the pool.
 */
export function holdOnClient(
  client: PgPoolClientLike,
  request: LockRequest,
  trace: LockTrace,
  pid: number,
  heartbeatMs: number,
): SessionLock {
  const executor = pgExecutor(client);
  const key = request.keys[0];
  return holdSessionLock(
    {
      executor,
      check: () => (key === undefined ? Promise.resolve(false) : holdsLock(executor, key)),
      close: (cause) => client.release(cause ?? false),
      watch(onDeath) {
        const onError = (error: Error): void => onDeath(error);
        const onEnd = (): void => onDeath(new Error('the connection ended'));
        client.on('error', onError);
        client.on('end', onEnd);
        return () => {
          client.removeListener('error', onError);
          client.removeListener('end', onEnd);
        };
      },
    },
    request,
    trace,
    pid,
    { intervalMs: heartbeatMs, timeoutMs: heartbeatMs },
  );
}
