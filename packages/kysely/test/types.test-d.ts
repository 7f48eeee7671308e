import type { Generated, Kysely, Transaction } from 'kysely';
import { describe, expectTypeOf, it } from 'vitest';
import {
  advisoryLocks,
  type LeaderCampaign,
  leader,
  lock,
  type RunOnceResult,
  runOnce,
  type SessionLock,
  tryLock,
  tryWithLock,
  withLock,
  withSessionLock,
} from '../src/index.ts';

interface Database {
  product: { id: Generated<number>; stock: number };
}
declare const db: Kysely<Database>;

describe('types', () => {
  it('runOnce gives the job a Transaction<Database>; leader returns its campaign', async () => {
    const result = await runOnce(
      db,
      'job',
      { per: '1h', transaction: { isolationLevel: 'serializable' } },
      async (trx) => {
        expectTypeOf(trx).toEqualTypeOf<Transaction<Database>>();
        return 1;
      },
    );
    expectTypeOf(result).toEqualTypeOf<RunOnceResult<number>>();
    // @ts-expect-error Kysely cannot apply deferrable
    void runOnce(db, 'job', { per: '1h', transaction: { deferrable: true } }, async () => 1);
    expectTypeOf(leader(db, 'scheduler', { onElected: () => undefined })).toEqualTypeOf<LeaderCampaign>();
  });

  it('lock() and tryLock() reject a non-transaction Kysely', () => {
    // @ts-expect-error a plain Kysely is not a transaction: the lock would be released at once
    lock(db, 'product:1');
    // @ts-expect-error a plain Kysely is not a transaction
    tryLock(db, 'product:1');
    // @ts-expect-error a plain Kysely is not a transaction
    advisoryLocks(db).lock(db, 'product:1');
  });

  it('a Kysely transaction is accepted, and trx keeps the Database types', async () => {
    await db.transaction().execute(async (trx) => {
      await lock(trx, 'product:1');
      expectTypeOf(await tryLock(trx, 'product:1')).toEqualTypeOf<boolean>();
    });
    const stock = await withLock(db, 'product:1', async (trx) => {
      expectTypeOf(trx).toEqualTypeOf<Transaction<Database>>();
      const row = await trx
        .selectFrom('product')
        .select('stock')
        .where('id', '=', 1)
        .executeTakeFirstOrThrow();
      return row.stock;
    });
    expectTypeOf(stock).toEqualTypeOf<number>();
    const tried = await advisoryLocks(db).tryWithLock('product:1', async (trx) => {
      // @ts-expect-error no such table in Database
      trx.selectFrom('nope');
      return 'done' as const;
    });
    if (tried.acquired) expectTypeOf(tried.value).toEqualTypeOf<'done'>();
    expectTypeOf(await tryWithLock(db, 'x', async () => 1)).toMatchTypeOf<{ acquired: boolean }>();
  });

  it('transaction settings: one `transaction` option, only what Kysely applies', () => {
    // @ts-expect-error MSSQL's snapshot isolation is not PostgreSQL's
    withLock(db, 'x', async () => 1, { transaction: { isolationLevel: 'snapshot' } });
    // @ts-expect-error Kysely's builder has no deferrable
    withLock(db, 'x', async () => 1, { transaction: { deferrable: true } });
    // @ts-expect-error the settings moved under `transaction`
    withLock(db, 'x', async () => 1, { isolationLevel: 'serializable' });
    withLock(db, 'x', async () => 1, {
      transaction: { isolationLevel: 'repeatable read', accessMode: 'read only' },
    });
    advisoryLocks(db, { transaction: { isolationLevel: 'serializable' }, timeoutMs: 1_000 });
  });

  it('withLock given a transaction nests there: the callback gets the same Transaction type', async () => {
    await withLock(db, 'outer', async (trx) => {
      await withLock(trx, 'inner', async (inner) => {
        expectTypeOf(inner).toEqualTypeOf<Transaction<Database>>();
      });
    });
  });

  it('the factory takes a control instance; session verbs are on it', async () => {
    const locks = advisoryLocks(db, { control: db as Kysely<unknown> });
    expectTypeOf(await locks.tryAcquireSessionLock('leader')).toEqualTypeOf<SessionLock | undefined>();
    // @ts-expect-error control is a Kysely instance
    advisoryLocks(db, { control: 'postgres://…' });
  });

  it('withSessionLock gives fn the lost-connection signal', () => {
    withSessionLock(db, 'leader', async (signal) => {
      expectTypeOf(signal).toEqualTypeOf<AbortSignal>();
    });
  });
});
