import { LockUsageError, TransactionRolledBackError } from '@pglock/core';
import type * as port from '@pglock/core/adapter';
import { beginText, sendCancelRequest } from '@pglock/core/adapter';
import { isPool, type PgClientLike, type PgPoolClientLike, type PgQueryable } from './pg-types.ts';

const STATUS = { I: 'idle', T: 'transaction', E: 'failed' } as const;

const rowsOf = (result: { readonly rows: readonly Record<string, unknown>[] }) => result.rows;

// One connection object per client, so the hot path builds nothing per call.
const connections = new WeakMap<PgClientLike, port.PortConnection>();

function connectionOf(client: PgClientLike): port.PortConnection {
  let connection = connections.get(client);
  if (connection === undefined) {
    connection = {
      // A plain `then` rather than an async wrapper: one promise fewer on every statement.
      query: (s) => client.query(s.text, s.values as string[]).then(rowsOf),
      // A failed statement rejects before its ReadyForQuery updates the status: until then, unknown.
      transactionStatus: () =>
        client.readyForQuery === false
          ? undefined
          : STATUS[client.getTransactionStatus?.() as keyof typeof STATUS],
      cancel: () => sendCancelRequest(client),
    };
    connections.set(client, connection);
  }
  return connection;
}

// A lone client runs one transaction at a time; a second withLock on it would interleave.
const busyClients = new WeakSet<PgClientLike>();

function claim(client: PgClientLike): PgClientLike {
  if (busyClients.has(client)) {
    throw new LockUsageError(
      'withLock: this pg.Client is already running a withLock transaction; pass a pg.Pool for concurrent calls, or lock inside the running callback.',
    );
  }
  busyClients.add(client);
  return client;
}

const isClient = (handle: unknown): handle is PgClientLike =>
  typeof (handle as PgClientLike | null)?.query === 'function' && !isPool(handle as PgQueryable);

/**
 * pglock's port for node-postgres: a transaction is BEGIN … COMMIT on one checked-out client (or the
 * given client); a wait is cancelled with the protocol CancelRequest, so it needs no second pooled
 * connection; a session lock pins a checked-out client with `'error'` and `'end'` listeners from
 * checkout to release.
 */
export const pgPort: port.LockPort<PgQueryable, PgClientLike> = {
  name: '@pglock/pg',
  transactionSettings: ['isolationLevel', 'accessMode', 'deferrable'],
  connectionOf(handle) {
    // A client busy in a withLock of ours is reached from its callback through the lock context;
    // anywhere else it is a second, concurrent call, which transaction() refuses.
    if (!isClient(handle) || busyClients.has(handle)) return undefined;
    const status = handle.getTransactionStatus?.();
    return status === 'T' || status === 'E' ? connectionOf(handle) : undefined;
  },
  async transaction(db, request, body) {
    const pooled = isPool(db) ? await db.connect() : undefined;
    const client = pooled ?? claim(db as PgClientLike);
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
      await client.query(beginText(request.settings));
      step = 1;
      const result = await body(client, connectionOf(client));
      step = 2;
      const committed = await client.query('COMMIT');
      step = 0;
      if ((committed as { command?: unknown }).command === 'ROLLBACK') {
        throw new TransactionRolledBackError(
          'withLock: PostgreSQL answered the COMMIT with ROLLBACK (a statement in the transaction had failed): nothing the callback wrote was saved.',
        );
      }
      return result;
    } catch (error) {
      if (step === 0) throw error;
      await client.query('ROLLBACK').catch((rollbackError: Error) => {
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
  },
  query: (db, s) => db.query(s.text, s.values as string[]).then(rowsOf),
  cancellation: () => 'connection',
  async controlConnection(db): Promise<port.ControlConnection> {
    if (!isPool(db) || typeof db.Client !== 'function') {
      throw new Error('a control connection needs a pg.Pool (its settings open one outside the pool)');
    }
    const client = new db.Client(db.options);
    client.on('error', () => undefined);
    await client.connect();
    return {
      query: (s) => client.query(s.text, s.values as string[]).then(rowsOf),
      release: () => client.end().catch(() => undefined),
    };
  },
  async pin(db, onDeath): Promise<port.PinnedConnection> {
    if (!isPool(db)) {
      throw new LockUsageError(
        'Session locks check out a dedicated connection: pass a pg.Pool (a lone pg.Client is yours, not pglock’s to pin).',
      );
    }
    const client: PgPoolClientLike = await db.connect();
    const onError = (error: Error): void => onDeath(error);
    const onEnd = (): void => onDeath(new Error('the connection ended'));
    client.on('error', onError).on('end', onEnd);
    return {
      ...connectionOf(client),
      processID: typeof client.processID === 'number' ? client.processID : undefined,
      heartbeatOn: 'pinned',
      release(state, cause) {
        client.removeListener('end', onEnd);
        // A destroyed client keeps its error listener for whatever its teardown reports.
        if (state === 'clean') client.removeListener('error', onError);
        client.release(state === 'clean' ? false : (cause ?? true));
      },
    };
  },
};
