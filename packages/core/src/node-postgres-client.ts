import { LockUsageError, TransactionRolledBackError } from './errors.ts';
import type { ControlConnection, PinnedConnection, PortConnection, Row } from './lock-port.ts';
import { type CancelKey, sendCancelRequest } from './send-cancel-request.ts';
import type { Statement } from './statement.ts';
import { beginText, type CheckedTransactionSettings } from './transaction-settings.ts';
import { commitStatement, rollbackStatement } from './transaction-statements.ts';

// Three adapters reach PostgreSQL through node-postgres: @pglock/pg, Drizzle's node-postgres driver
// and Prisma's @prisma/adapter-pg. What pglock does with a pg client is written here once, typed by
// the members it calls (as Kysely's `PostgresPool` is), so any pg 8.x minor, or a pg-compatible
// pool, fits, and core still has no dependency on pg.

/**
 * The slice of a node-postgres client (`pg.Client`, or a `pg.PoolClient` checked out of a pool) that
 * pglock calls. The cancel key's members (`processID`, `secretKey`, `host`, `port`) serve the
 * protocol cancel of a wait; node-postgres sets them after connecting.
 *
 * @example
 * ```ts
 * import type { NodePostgresClient } from '@pglock/core/adapter';
 * import pg from 'pg';
 *
 * const client: NodePostgresClient = new pg.Client();
 * ```
 */
export interface NodePostgresClient extends CancelKey {
  query(text: string, values?: unknown[]): Promise<{ readonly rows: readonly Row[] }>;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
  removeListener(event: 'error', listener: (error: Error) => void): unknown;
  removeListener(event: 'end', listener: () => void): unknown;
  /**
   * node-postgres's transaction status from the last ReadyForQuery: `'I'` idle, `'T'` in a
   * transaction, `'E'` in a failed one (pg 8.16+). Tells whether a client is inside your transaction.
   */
  getTransactionStatus?(): string | null;
  /** False while a statement's ReadyForQuery (which carries that status) has not arrived yet. */
  readonly readyForQuery?: boolean;
}

/**
 * A client checked out of a `pg.Pool`; `release(error)` destroys it instead of handing it back.
 *
 * @example
 * ```ts
 * import type { NodePostgresPoolClient } from '@pglock/core/adapter';
 *
 * const client: NodePostgresPoolClient = await pool.connect();
 * ```
 */
export interface NodePostgresPoolClient extends NodePostgresClient {
  release(destroy?: Error | boolean): void;
}

/**
 * A client of pglock's own, outside any pool: connected and ended by pglock.
 *
 * @example
 * ```ts
 * import type { NodePostgresStandaloneClient } from '@pglock/core/adapter';
 * import pg from 'pg';
 *
 * const own: NodePostgresStandaloneClient = new pg.Client();
 * ```
 */
export interface NodePostgresStandaloneClient extends NodePostgresClient {
  connect(): Promise<unknown>;
  end(): Promise<void>;
}

/**
 * The slice of a `pg.Pool` that pglock calls.
 *
 * @example
 * ```ts
 * import type { NodePostgresPool } from '@pglock/core/adapter';
 * import pg from 'pg';
 *
 * const pool: NodePostgresPool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * ```
 */
export interface NodePostgresPool {
  connect(): Promise<NodePostgresPoolClient>;
  query(text: string, values?: unknown[]): Promise<{ readonly rows: readonly Row[] }>;
  readonly totalCount: number;
  /** The pool's settings; a connection outside the pool (cancel, pooler check) is opened with them. */
  readonly options?: object;
  /** The client class the pool creates (pg-pool keeps it), used for that connection. */
  readonly Client?: new (
    config?: object,
  ) => NodePostgresStandaloneClient;
}

/**
 * True for a `pg.Pool`: a client has no `totalCount`.
 *
 * @example
 * ```ts
 * import { isNodePostgresPool } from '@pglock/core/adapter';
 *
 * const client = isNodePostgresPool(db) ? await db.connect() : db;
 * ```
 */
export function isNodePostgresPool(db: unknown): db is NodePostgresPool {
  const pool = db as NodePostgresPool | null | undefined;
  return typeof pool?.totalCount === 'number' && typeof pool.connect === 'function';
}

const rowsOf = (result: { readonly rows: readonly Row[] }) => result.rows;

/**
 * Runs one statement on a pool or a client and resolves its rows: a plain `then` rather than an
 * async wrapper, one promise fewer on every statement.
 *
 * @example
 * ```ts
 * import { inspectLocksStatement, queryNodePostgres } from '@pglock/core/adapter';
 *
 * const rows = await queryNodePostgres(pool, inspectLocksStatement);
 * ```
 */
export function queryNodePostgres(
  db: Pick<NodePostgresClient, 'query'>,
  statement: Statement,
): Promise<readonly Row[]> {
  return db.query(statement.text, statement.values as string[]).then(rowsOf);
}

const STATUS = { I: 'idle', T: 'transaction', E: 'failed' } as const;

// One connection object per client, so the hot path builds nothing per call (a pooled client
// serves many transactions).
const connections = new WeakMap<object, PortConnection>();

/**
 * The {@link PortConnection} of a node-postgres client: statements on it, its transaction status
 * read without a round trip, and the protocol CancelRequest for a wait (no second pooled connection).
 *
 * @example
 * ```ts
 * import { nodePostgresConnection } from '@pglock/core/adapter';
 *
 * const connection = nodePostgresConnection(await pool.connect());
 * ```
 */
export function nodePostgresConnection(client: NodePostgresClient): PortConnection {
  let connection = connections.get(client);
  if (connection === undefined) {
    connection = {
      query: (s) => queryNodePostgres(client, s),
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
const busyClients = new WeakSet<object>();

/**
 * The connection of `handle` when it is a node-postgres client inside a transaction the caller
 * opened (after their `BEGIN`), else `undefined`: a pool, a client outside a transaction, or a lone
 * client busy in a {@link nodePostgresTransaction} (reached from its callback through the lock
 * context; anywhere else it is a second, concurrent call, which the transaction refuses).
 *
 * @example
 * ```ts
 * import { nodePostgresTransactionOf } from '@pglock/core/adapter';
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
 * import { claimNodePostgresClient } from '@pglock/core/adapter';
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
 * import { type LockPort, nodePostgresTransaction } from '@pglock/core/adapter';
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
 * import { guardNodePostgresClient } from '@pglock/core/adapter';
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
 * import { type LockPort, pinNodePostgresClient } from '@pglock/core/adapter';
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

/** A client opened by {@link openNodePostgresClient}, and how to close it (never rejects). */
export interface OpenedNodePostgresClient {
  readonly client: NodePostgresStandaloneClient;
  end(): Promise<void>;
}

/**
 * Opens a client outside any pool with the settings of `source`: a `pg.Pool`'s `options` and
 * `Client` class, or a `pg.Client`'s `connectionParameters`. For a cancel or a pooler probe that must
 * work while every pooled connection is busy, and for a connection that must be closable on its own.
 * `onClose` hears its `'error'` and `'end'`.
 *
 * @example
 * ```ts
 * import { openNodePostgresClient, queryNodePostgres } from '@pglock/core/adapter';
 *
 * const own = await openNodePostgresClient(pool);
 * const control = { query: (s) => queryNodePostgres(own.client, s), release: own.end };
 * ```
 */
export async function openNodePostgresClient(
  source: NodePostgresPool | NodePostgresClient,
  onClose: (error?: Error) => void = () => undefined,
): Promise<OpenedNodePostgresClient> {
  type Settings = { readonly connectionParameters?: object; readonly options?: object };
  const { Client } = source as NodePostgresPool;
  const { connectionParameters, options } = source as Settings;
  const ClientClass = isNodePostgresPool(source)
    ? Client
    : (source.constructor as NodePostgresPool['Client']);
  if (typeof ClientClass !== 'function') {
    throw new Error('a connection outside the pool needs a pg.Pool or a pg.Client (their settings open one)');
  }
  const client = new ClientClass(isNodePostgresPool(source) ? options : connectionParameters);
  client.on('error', onClose);
  client.on('end', onClose);
  await client.connect();
  return { client, end: () => client.end().catch(() => undefined) };
}

/**
 * A small pool of pglock's own, of a `pg.Pool`'s class and settings, for control statements (a
 * cancel by backend pid): outside the app's pool, since a cancel must work while every pooled
 * connection waits; one connection, closed when idle for 10 s, never keeping the process alive.
 */
export interface NodePostgresControlPool {
  /** Its connection, once the pool is made; release leaves it in the pool. */
  connection(): Promise<ControlConnection>;
  /** Connects ahead of need, so that a cancel needs no connection setup (best effort: never fails). */
  warm(): void;
}

interface ControlPool {
  readonly connection: ControlConnection;
  warm(): Promise<void>;
}

const controlPools = new WeakMap<object, Promise<ControlPool>>();

/**
 * The {@link NodePostgresControlPool} of `key`, made once over the `pg.Pool` that `source` finds
 * (it may have to open something to find it); a failure is not kept, so the next use tries again.
 *
 * @example
 * ```ts
 * import { nodePostgresControlPool } from '@pglock/core/adapter';
 *
 * const control = nodePostgresControlPool(db, () => db.pool);
 * control.warm();
 * const connection = await control.connection();
 * ```
 */
export function nodePostgresControlPool(key: object, source: () => unknown): NodePostgresControlPool {
  const pool = (): Promise<ControlPool> => {
    let control = controlPools.get(key);
    if (control === undefined) {
      control = Promise.resolve().then(source).then(openControlPool);
      control.catch(() => controlPools.delete(key));
      controlPools.set(key, control);
    }
    return control;
  };
  return {
    connection: async () => (await pool()).connection,
    warm() {
      pool()
        .then((control) => control.warm())
        .catch(() => undefined);
    },
  };
}

function openControlPool(source: unknown): ControlPool {
  const app = source as NodePostgresPool | null | undefined;
  if (typeof app?.query !== 'function' || app.options === undefined) {
    throw new Error('no control connection: the driver is not node-postgres (no pg.Pool to copy)');
  }
  const Pool = app.constructor as new (
    options: object,
  ) => NodePostgresPool & {
    on(event: 'error', listener: () => void): unknown;
  };
  const pool = new Pool({ ...app.options, max: 1, idleTimeoutMillis: 10_000, allowExitOnIdle: true });
  pool.on('error', () => undefined);
  return {
    connection: { query: (s) => queryNodePostgres(pool, s), release: () => undefined },
    async warm() {
      // A failed warm-up leaves the connect to the cancel, which reports its failure.
      if (pool.totalCount === 0) (await pool.connect()).release();
    },
  };
}
