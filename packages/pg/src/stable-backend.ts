import { AdvisoryLockError, describeKeys, type LockRequest, releaseSessionLocks } from '@pglock/core';
import { pgExecutor } from './pg-executor.ts';
import type { PgPoolClientLike, PgPoolLike } from './pg-types.ts';

const PROBE_TIMEOUT_MS = 1_000;

/**
 * A session lock needs one server backend for its whole life. Straight to PostgreSQL, the
 * connection's cancel key pid (`processID`) is its backend pid, and that settles it. Through a
 * pooler the key is the pooler's own, so probe: in session mode our statements keep one backend and
 * another client gets a different one; in transaction mode PgBouncer hands the same idle backend
 * (LIFO) to whoever asks next, so a second client sees ours, or our own next statement lands elsewhere.
 * When the probe shows a transaction pooler, the lock is released (or its backend terminated, so
 * that it cannot stay held on an idle pooled connection) and the call fails with a clear error.
 */
export async function assertStableBackend(
  pool: PgPoolLike,
  client: PgPoolClientLike,
  pid: number,
  request: LockRequest,
): Promise<void> {
  if (client.processID === pid) return;
  const otherPid = await probeOtherClient(pool);
  const againPid = Number((await client.query('SELECT pg_backend_pid() AS pid')).rows[0]?.pid);
  if (againPid === pid && otherPid !== pid) return;

  try {
    await releaseSessionLocks(pgExecutor(client), request);
  } catch {
    await client.query('SELECT pg_terminate_backend($1::int)', [pid]).catch(() => undefined);
  }
  throw new AdvisoryLockError(
    'LOCK_USAGE',
    `The session ${describeKeys(request)} cannot be held through this connection: it is served by a transaction-mode pooler ` +
      `(e.g. PgBouncer pool_mode = transaction), so its statements run on changing server backends and an unlock could land ` +
      `on another one. Use withLock (transaction-scoped locks work through transaction pooling), or take session locks on a ` +
      'direct connection or through a session-mode pool. The lock was released.',
    { keys: request.keys },
  );
}

// Another client's backend pid, or undefined when the pool cannot lend one within the probe timeout.
async function probeOtherClient(pool: PgPoolLike): Promise<number | undefined> {
  const pending = pool.connect();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), PROBE_TIMEOUT_MS);
  });
  const other = await Promise.race([pending, timeout]);
  clearTimeout(timer);
  if (other === undefined) {
    pending.then(
      (late) => late.release(),
      () => undefined,
    );
    return undefined;
  }
  try {
    return Number((await other.query('SELECT pg_backend_pid() AS pid')).rows[0]?.pid);
  } finally {
    other.release();
  }
}
