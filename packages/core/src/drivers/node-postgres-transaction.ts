import { LockUsageError, TransactionRolledBackError } from '../errors.ts';
import type { PinnedConnection, PortConnection } from '../lock-port.ts';
import { beginText, type CheckedTransactionSettings } from '../transaction-settings.ts';
import { commitStatement, rollbackStatement } from '../transaction-statements.ts';
import {
  isNodePostgresPool,
  type NodePostgresClient,
  type NodePostgresPool,
  nodePostgresConnection,
} from './node-postgres-client.ts';

// A lone client runs one transaction at a time; a second withLock on it would interleave.
const busyClients = new WeakSet<object>();

/**
 * The connection of `handle` when it is a node-postgres client inside a transaction the caller
 * opened (after their `BEGIN`), else `undefined`: a pool, a client outside a transaction, or a lone
 * client busy in a {@link nodePostgresTransaction} (reached from its callback through the lock
 * context; anywhere else it is a second, concurrent call, which the transaction refuses).
 *
 * @example
 * ```ts
 * import { nodePostgresTransactionOf } from '@pglock/core/drivers/node-postgres';
 *
 * const port = { connectionOf: nodePostgresTransactionOf };
 * ```
 */
export function nodePostgresTransactionOf(handle: unknown): PortConnection | undefined {
  const client = handle as NodePostgresClient | null | undefined;
  if (typeof client?.query !== 'function' || isNodePostgresPool(client) || busyClients.has(client)) {
    return undefined;
  }
  const status = client.getTransactionStatus?.();
  return status === 'T' || status === 'E' ? nodePostgresConnection(client) : undefined;
}

function claim(client: NodePostgresClient): NodePostgresClient {
  if (busyClients.has(client)) {
    throw new LockUsageError(
      'withLock: this pg.Client is already running a withLock transaction; pass a pg.Pool for concurrent calls, or lock inside the running callback.',
    );
  }
  busyClients.add(client);
  return client;
}

/**
 * Marks a lone node-postgres client as running a pglock transaction until the returned function is
 * called; `LockUsageError` when it already is. For an adapter whose ORM opens the transaction itself
 * on the client: claim before the ORM sends BEGIN, since a second BEGIN on the same session joins the
 * running transaction, and its lock statement then succeeds there (re-entrant): two holders at once.
 *
 * @example
 * ```ts
 * import { claimNodePostgresClient } from '@pglock/core/drivers/node-postgres';
 *
 * const unclaim = claimNodePostgresClient(client);
 * try {
 *   await db.transaction(body);
 * } finally {
 *   unclaim();
 * }
 * ```
 */
export function claimNodePostgresClient(client: NodePostgresClient): () => void {
  claim(client);
  let claimed = true;
  return () => {
    if (!claimed) return;
    claimed = false;
    busyClients.delete(client);
  };
}

/**
 * Runs `body` in `BEGIN … COMMIT` on one client: checked out of `db` when it is a pool, else `db`
 * itself (one transaction at a time). `body` throwing rolls back; a COMMIT that PostgreSQL answers
 * with ROLLBACK is `TransactionRolledBackError`; a client whose connection failed meanwhile, or whose
 * ROLLBACK failed, is destroyed rather than handed back to the pool.
 *
 * @example
 * ```ts
 * import type { LockPort } from '@pglock/core/adapter';
 * import { nodePostgresTransaction } from '@pglock/core/drivers/node-postgres';
 *
 * const transaction: LockPort<Pool, Client>['transaction'] = (db, { settings }, body) =>
 *   nodePostgresTransaction(db, settings, body);
 * ```
 */
export async function nodePostgresTransaction<R>(
  db: NodePostgresPool | NodePostgresClient,
  settings: CheckedTransactionSettings,
  body: (client: NodePostgresClient, connection: PortConnection) => Promise<R>,
): Promise<R> {
  const pooled = isNodePostgresPool(db) ? await db.connect() : undefined;
  const client = pooled ?? claim(db as NodePostgresClient);
  // pg-pool takes its idle 'error' listener off a checked-out client, so a backend terminated while
  // the callback runs no statement would crash the process; keep the error for the next statement.
  let lost: Error | undefined;
  const onError = (error: Error): void => {
    lost ??= error;
  };
  client.on('error', onError);
  let broken: Error | undefined;
  // 1: the callback runs, 2: COMMIT is on its way; a failure then is rolled back. One try/catch,
  // not a `.catch` per step: no promises or closures beyond the statements on every call.
  let step = 0;
  try {
    await client.query(beginText(settings));
    step = 1;
    const result = await body(client, nodePostgresConnection(client));
    step = 2;
    const committed = await client.query(commitStatement.text);
    step = 0;
    if ((committed as { command?: unknown }).command === 'ROLLBACK') {
      throw new TransactionRolledBackError(
        'withLock: PostgreSQL answered the COMMIT with ROLLBACK (a statement in the transaction had failed): nothing the callback wrote was saved.',
      );
    }
    return result;
  } catch (error) {
    if (step === 0) throw error;
    await client.query(rollbackStatement.text).catch((rollbackError: Error) => {
      broken = rollbackError;
    });
    // "Client has encountered a connection error and is not queryable" hides why: say it.
    throw step === 2 ? (lost ?? error) : error;
  } finally {
    if (lost) broken ??= lost;
    if (pooled) pooled.release(broken ?? false);
    else busyClients.delete(client);
    // Late errors of a destroyed client (its end) must not become unhandled 'error' events.
    if (!broken || !pooled) client.removeListener('error', onError);
  }
}

/**
 * Keeps an `'error'` listener on a client checked out for a transaction run by someone else's API
 * (an ORM's `transaction()`): pg-pool takes its idle listener off a checked-out client, so a backend
 * that dies while the callback runs no statement would be an unhandled `'error'` event. Call the
 * returned function when the transaction ended: the listener stays on a client that failed, for
 * whatever its teardown reports.
 *
 * @example
 * ```ts
 * import { guardNodePostgresClient } from '@pglock/core/drivers/node-postgres';
 *
 * const done = guardNodePostgresClient(client);
 * try {
 *   await work(client);
 * } finally {
 *   done();
 * }
 * ```
 */
export function guardNodePostgresClient(client: NodePostgresClient): () => void {
  let lost = false;
  const onError = (): void => {
    lost = true;
  };
  client.on('error', onError);
  return () => {
    if (!lost) client.removeListener('error', onError);
  };
}

/**
 * Pins a client checked out of `pool` for a session lock: `'error'` and `'end'` listeners report
 * its death from checkout to release; release hands it back only when clean, else destroys it.
 *
 * @example
 * ```ts
 * import type { LockPort } from '@pglock/core/adapter';
 * import { pinNodePostgresClient } from '@pglock/core/drivers/node-postgres';
 *
 * const pin: LockPort<Pool, Client>['pin'] = (pool, onDeath) => pinNodePostgresClient(pool, onDeath);
 * ```
 */
export async function pinNodePostgresClient(
  pool: NodePostgresPool,
  onDeath: (cause: unknown) => void,
): Promise<PinnedConnection> {
  const client = await pool.connect();
  const onError = (error: Error): void => onDeath(error);
  const onEnd = (): void => onDeath(new Error('the connection ended'));
  client.on('error', onError);
  client.on('end', onEnd);
  return {
    ...nodePostgresConnection(client),
    processID: typeof client.processID === 'number' ? client.processID : undefined,
    heartbeatOn: 'pinned',
    release(state, cause) {
      client.removeListener('end', onEnd);
      // A destroyed client keeps its error listener for whatever its teardown reports.
      if (state === 'clean') client.removeListener('error', onError);
      client.release(state === 'clean' ? false : (cause ?? true));
    },
  };
}
