/**
 * pglock's postgres.js room, for adapter authors: a postgres.js `sql` (or a `begin` / `reserve`
 * scope) as a `PortConnection`, a connection of its own for session locks, connections an ORM
 * lends (Kysely's `db.connection()`), and the commit postgres.js's `begin` refuses. Only an adapter
 * whose ORM runs on postgres.js imports this entry; the protocol in `@pglock/core` never does.
 *
 * @module @pglock/core/drivers/postgres-js
 */

export { type LentConnection, lentControl, lentPin } from './lent-connection.ts';
export { pinOwnConnection } from './own-connection.ts';
export {
  type OpenedPostgresJs,
  openPostgresJs,
  type PostgresJsQuery,
  type PostgresJsSql,
  postgresJsConnection,
} from './postgres-js-connection.ts';
export { refusedCommitError } from './refused-commit.ts';
