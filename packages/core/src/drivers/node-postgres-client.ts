import type { PortConnection, Row } from '../lock-port.ts';
import type { Statement } from '../statement.ts';
import { type CancelKey, sendCancelRequest } from './cancel-request.ts';

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
 * import type { NodePostgresClient } from '@pglock/core/drivers/node-postgres';
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
 * import type { NodePostgresPoolClient } from '@pglock/core/drivers/node-postgres';
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
 * import type { NodePostgresStandaloneClient } from '@pglock/core/drivers/node-postgres';
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
 * import type { NodePostgresPool } from '@pglock/core/drivers/node-postgres';
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
 * import { isNodePostgresPool } from '@pglock/core/drivers/node-postgres';
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
 * import { inspectLocksStatement } from '@pglock/core/internal';
 * import { queryNodePostgres } from '@pglock/core/drivers/node-postgres';
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
 * import { nodePostgresConnection } from '@pglock/core/drivers/node-postgres';
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
