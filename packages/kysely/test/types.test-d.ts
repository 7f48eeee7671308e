import type { Generated, Kysely, Transaction } from 'kysely';
import { describe, expectTypeOf, it } from 'vitest';
import { advisoryLocks, lock, tryLock, tryWithLock, withLock, withSessionLock } from '../src/index.ts';

interface Database {
  product: { id: Generated<number>; stock: number };
}
declare const db: Kysely<Database>;

describe('types', () => {
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

  it('transaction options take only what PostgreSQL has', () => {
    // @ts-expect-error MSSQL's snapshot isolation is not PostgreSQL's
    withLock(db, 'x', async () => 1, { isolationLevel: 'snapshot' });
    withLock(db, 'x', async () => 1, { isolationLevel: 'repeatable read', accessMode: 'read only' });
  });

  it('withSessionLock gives fn the lost-connection signal', () => {
    withSessionLock(db, 'leader', async (signal) => {
      expectTypeOf(signal).toEqualTypeOf<AbortSignal>();
    });
  });
});
