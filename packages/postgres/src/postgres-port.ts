import { LockUsageError } from '@pglock/core';
import type * as port from '@pglock/core/adapter';
import { beginText } from '@pglock/core/adapter';
import {
  openPostgresJs,
  type PostgresJsSql,
  pinOwnConnection,
  postgresJsConnection,
  refusedCommitError,
} from '@pglock/core/drivers/postgres-js';
import type {
  PostgresQueryable,
  PostgresSqlLike,
  PostgresTransactionLike,
  PostgresUnsafe,
} from './postgres-types.ts';

// Core's slice of postgres.js reads what a query carries (its pid, its canceller) and passes its
// values as a readonly array, which postgres.js's `unsafe` takes (and never changes) as a mutable one.
const driver = (sql: PostgresUnsafe) => sql as unknown as PostgresJsSql;
const run = (sql: PostgresUnsafe, s: port.Statement) => driver(sql).unsafe(s.text, s.values);

const isTransaction = (handle: unknown): handle is PostgresTransactionLike =>
  typeof (handle as { savepoint?: unknown } | null)?.savepoint === 'function' &&
  typeof (handle as { unsafe?: unknown }).unsafe === 'function';

/** `handle` as a `sql` that can open transactions, or `LockUsageError` naming `verb`. */
function root(handle: unknown, verb: string): PostgresSqlLike {
  const sql = handle as Partial<PostgresSqlLike> | null;
  if (typeof sql?.begin === 'function' && typeof sql.options === 'object') return sql as PostgresSqlLike;
  throw new LockUsageError(
    `${verb}: expected the \`sql\` of postgres.js (what postgres(url) returns)${isTransaction(handle) ? ', not a transaction' : ''}: a reserved connection (sql.reserve()) opens no transaction of its own, and session locks open a connection with the settings of \`sql\`.`,
  );
}

/**
 * A connection of pglock's own with the settings of `sql` (what postgres.js's own `subscribe` opens:
 * one connection, without idle or lifetime end), outside its pool: the pooler check and a session
 * lock must not wait for a pooled connection, and a session lock's connection must be closable alone.
 */
async function ownConnection(db: unknown, verb: string, onClose?: () => void) {
  return openPostgresJs(await import('postgres'), root(db, verb), onClose);
}

/**
 * pglock's port for postgres.js, over core's postgres.js connection: a transaction is `sql.begin`,
 * and pglock's statements run in it with `unsafe`; a wait is cancelled with the query's own
 * CancelRequest, never through the pool; a session lock pins a connection of its own, closed at
 * release. Not `sql.reserve()`: a reserved connection can be neither closed alone nor handed back once
 * dead (porsager/postgres#1199), a write after it closed throws from a timer (#1208), so its heartbeat
 * would have to run on `sql`'s pool, which a pool of one (the reservation itself) never answers.
 */
export const postgresPort: port.LockPort<PostgresQueryable, PostgresTransactionLike> = {
  name: '@pglock/postgres',
  transactionSettings: ['isolationLevel', 'accessMode', 'deferrable'],
  connectionOf: (handle) => (isTransaction(handle) ? postgresJsConnection(driver(handle)) : undefined),
  async transaction(db, { settings }, body) {
    let resolved = false;
    try {
      // `begin` sends 'begin ' + its options: the settings after core's `BEGIN`.
      return (await root(db, 'withLock').begin(beginText(settings).slice(6), async (tx) => {
        const result = await body(tx, postgresJsConnection(driver(tx)));
        resolved = true;
        return result;
      })) as never;
    } catch (error) {
      // The body resolved, yet postgres.js would not commit: `begin` rethrows a failed statement.
      throw (resolved && refusedCommitError(error, true, 'withLock')) || error;
    }
  },
  query: (db, s) => (isTransaction(db) ? postgresJsConnection(driver(db)).query(s) : run(db, s)),
  cancellation: () => 'connection',
  async controlConnection(db) {
    const own = await ownConnection(db, 'acquireSessionLock');
    return { query: postgresJsConnection(own.sql).query, release: own.end };
  },
  async pin(db, onDeath) {
    const own = await ownConnection(db, 'acquireSessionLock', () =>
      onDeath(new Error('the connection ended')),
    );
    const connection = postgresJsConnection(own.sql);
    return pinOwnConnection(connection, own.end, () => undefined);
  },
};
