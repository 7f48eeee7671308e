/**
 * pglock's node-postgres (`pg`) room, for adapter authors: a `pg.Pool` or `pg.Client` as a
 * `PortConnection`, pglock's own transaction on it, a pinned client for session locks, and a
 * private pool for cancel requests and heartbeats. Only an adapter whose ORM runs on node-postgres
 * imports this entry; the protocol in `@pglock/core` never does.
 *
 * @module @pglock/core/drivers/node-postgres
 */

export type { CancelKey } from './cancel-request.ts';
export {
  isNodePostgresPool,
  type NodePostgresClient,
  type NodePostgresPool,
  type NodePostgresPoolClient,
  type NodePostgresStandaloneClient,
  nodePostgresConnection,
  queryNodePostgres,
} from './node-postgres-client.ts';
export {
  type NodePostgresControlPool,
  nodePostgresControlPool,
  type OpenedNodePostgresClient,
  openNodePostgresClient,
} from './node-postgres-own.ts';
export {
  claimNodePostgresClient,
  guardNodePostgresClient,
  nodePostgresTransaction,
  nodePostgresTransactionOf,
  pinNodePostgresClient,
} from './node-postgres-transaction.ts';
export { pinOwnConnection } from './own-connection.ts';
