import { LockUsageError } from '@pglock/core';
import type * as port from '@pglock/core/adapter';
import {
  isNodePostgresPool,
  nodePostgresTransaction,
  nodePostgresTransactionOf,
  openNodePostgresClient,
  pinNodePostgresClient,
  queryNodePostgres,
} from '@pglock/core/drivers/node-postgres';
import type { PgClientLike, PgQueryable } from './pg-types.ts';

/**
 * pglock's port for node-postgres, over core's node-postgres client: a transaction is BEGIN … COMMIT
 * on one checked-out client (or the given client); a wait is cancelled with the protocol
 * CancelRequest, so it needs no second pooled connection; a session lock pins a checked-out client
 * with `'error'` and `'end'` listeners from checkout to release.
 */
export const pgPort: port.LockPort<PgQueryable, PgClientLike> = {
  name: '@pglock/pg',
  transactionSettings: ['isolationLevel', 'accessMode', 'deferrable'],
  connectionOf: nodePostgresTransactionOf,
  transaction: (db, { settings }, body) => nodePostgresTransaction(db, settings, body),
  query: queryNodePostgres,
  cancellation: () => 'connection',
  // The callback's client goes back to the pool and to its next caller.
  reusesTransactionHandle: true,
  async controlConnection(db): Promise<port.ControlConnection> {
    // Outside the pool, with its settings: the pooler check must work while every pooled client waits.
    const own = await openNodePostgresClient(db);
    return { query: (s) => queryNodePostgres(own.client, s), release: own.end };
  },
  async pin(db, onDeath) {
    if (!isNodePostgresPool(db)) {
      throw new LockUsageError(
        'Session locks check out a dedicated connection: pass a pg.Pool (a lone pg.Client is yours, not pglock’s to pin).',
      );
    }
    return pinNodePostgresClient(db, onDeath);
  },
};
