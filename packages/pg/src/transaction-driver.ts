import { AdvisoryLockError, InvalidLockOptionsError, type TransactionDriver } from '@pglock/core';
import { pgExecutor } from './pg-executor.ts';
import { isPool, type PgClientLike, type PgQueryable } from './pg-types.ts';

/** Isolation levels `withLock` can open its transaction with. */
export type IsolationLevel = 'read uncommitted' | 'read committed' | 'repeatable read' | 'serializable';

const BEGIN: Record<IsolationLevel, string> = {
  'read uncommitted': 'BEGIN ISOLATION LEVEL READ UNCOMMITTED',
  'read committed': 'BEGIN ISOLATION LEVEL READ COMMITTED',
  'repeatable read': 'BEGIN ISOLATION LEVEL REPEATABLE READ',
  serializable: 'BEGIN ISOLATION LEVEL SERIALIZABLE',
};

// A lone client can run one transaction at a time; a second withLock on it would interleave.
const busyClients = new WeakSet<PgClientLike>();

/** Checks the isolation level against the fixed list (it becomes SQL text, so nothing else passes). */
export function beginStatement(isolationLevel: IsolationLevel | undefined): string {
  if (isolationLevel === undefined) return 'BEGIN';
  const begin = BEGIN[isolationLevel];
  if (begin === undefined) {
    throw new InvalidLockOptionsError(
      `isolationLevel must be one of ${Object.keys(BEGIN).join(', ')} (got ${String(isolationLevel)}).`,
    );
  }
  return begin;
}

/**
 * core's {@link TransactionDriver} over node-postgres: one pinned client per transaction (checked out
 * of the pool, or the given client), BEGIN / COMMIT, ROLLBACK when the body throws. A client whose
 * ROLLBACK fails is destroyed rather than returned to the pool.
 */
export function pgTransactionDriver(db: PgQueryable, begin: string): TransactionDriver<PgClientLike> {
  return {
    executor: pgExecutor,
    async transaction(body) {
      const pooled = isPool(db) ? await db.connect() : undefined;
      const client = pooled ?? (db as PgClientLike);
      if (!pooled) {
        if (busyClients.has(client)) {
          throw new AdvisoryLockError(
            'LOCK_USAGE',
            'This pg.Client is already running a withLock transaction; pass a pg.Pool for concurrent calls, or use lock(client, …) inside the running one.',
          );
        }
        busyClients.add(client);
      }
      let broken: Error | undefined;
      // pg-pool takes its idle 'error' listener off a checked-out client, so a backend terminated
      // while `body` runs no statement would crash the process (unhandled 'error'); keep the error
      // instead, and let the next statement (at the latest COMMIT) reject with it.
      let lost: Error | undefined;
      const onError = (error: Error): void => {
        lost ??= error;
      };
      client.on('error', onError);
      try {
        await client.query(begin);
        let result: Awaited<ReturnType<typeof body>>;
        try {
          result = await body(client);
        } catch (error) {
          await client.query('ROLLBACK').catch((rollbackError: Error) => {
            broken = rollbackError;
          });
          throw error;
        }
        await client.query('COMMIT').catch(async (commitError: Error) => {
          await client.query('ROLLBACK').catch((rollbackError: Error) => {
            broken = rollbackError;
          });
          // "Client has encountered a connection error and is not queryable" hides why: say it.
          throw lost ?? commitError;
        });
        return result;
      } finally {
        client.removeListener('error', onError);
        if (lost) broken ??= lost;
        if (pooled) pooled.release(broken ?? false);
        else busyClients.delete(client);
      }
    },
  };
}
