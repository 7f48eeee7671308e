import postgres, { type TransactionSql } from 'postgres';
import { describe, expectTypeOf, it } from 'vitest';
import {
  acquireSessionLock,
  advisoryLocks,
  inspectLocks,
  isLocked,
  type LeaderCampaign,
  leader,
  lock,
  type PostgresAdvisoryLocks,
  type PostgresTransactionLike,
  runOnce,
  type SessionLock,
  type TryResult,
  type TxOf,
  tryAcquireSessionLock,
  tryLock,
  tryWithLock,
  withLock,
  withSessionLock,
} from '../src/index.ts';

const sql = postgres();
const typed = postgres({ types: { point: { to: 600, from: [600], serialize: String, parse: String } } });

describe('types', () => {
  it('tx is postgres.js’s own TransactionSql of the given sql, custom types included', async () => {
    await withLock(sql, 'a', async (tx) => {
      expectTypeOf(tx).toEqualTypeOf<TransactionSql>();
      const rows = await tx`SELECT 1 AS one`;
      expectTypeOf(rows).toMatchTypeOf<readonly unknown[]>();
    });
    await withLock(typed, 'a', async (tx) => {
      expectTypeOf(tx).toEqualTypeOf<TxOf<typeof typed>>();
      expectTypeOf(tx).toEqualTypeOf<TransactionSql<{ point: string }>>();
    });
    expectTypeOf(advisoryLocks(sql)).toEqualTypeOf<PostgresAdvisoryLocks<TransactionSql>>();
  });

  it('resolves the callback value; try wraps it', () => {
    expectTypeOf(withLock(sql, 'a', async () => 42)).toEqualTypeOf<Promise<number>>();
    expectTypeOf(tryWithLock(sql, 'a', async () => 'x')).toEqualTypeOf<Promise<TryResult<string>>>();
    expectTypeOf(advisoryLocks(sql).withLock('a', async () => true)).toEqualTypeOf<Promise<boolean>>();
  });

  it('withLock given a transaction nests there: the callback gets that transaction', async () => {
    await sql.begin(async (tx) => {
      await withLock(tx, 'inner', async (inner) => {
        expectTypeOf(inner).toEqualTypeOf<TransactionSql>();
      });
      await tx.savepoint(async (sp) =>
        withLock(sp, 'inner', async (inner) => expectTypeOf(inner).toEqualTypeOf(sp)),
      );
    });
  });

  it('lock() and tryLock() take a transaction only', async () => {
    // @ts-expect-error `sql` runs each statement in autocommit: the lock would end at once
    lock(sql, 'a');
    // @ts-expect-error not a transaction
    tryLock(sql, 'a');
    // @ts-expect-error not a transaction
    advisoryLocks(sql).lock(sql, 'a');
    const reserved = await sql.reserve();
    // @ts-expect-error a reserved connection is not a transaction either
    lock(reserved, 'a');
    await sql.begin(async (tx) => {
      await lock(tx, 'a');
      expectTypeOf(await tryLock(tx, ['a', 'b'], { timeoutMs: 10 })).toEqualTypeOf<boolean>();
      await advisoryLocks(sql).lock(tx, 'a');
      const accepted: PostgresTransactionLike = tx;
      void accepted;
    });
  });

  it('session verbs take `sql`, not a transaction nor a reserved connection', async () => {
    expectTypeOf(await acquireSessionLock(sql, 'leader')).toEqualTypeOf<SessionLock>();
    expectTypeOf(await tryAcquireSessionLock(sql, 'leader')).toEqualTypeOf<SessionLock | undefined>();
    withSessionLock(sql, 'leader', async (signal) => {
      expectTypeOf(signal).toEqualTypeOf<AbortSignal>();
    });
    expectTypeOf(leader(sql, 'scheduler', { onElected: () => undefined })).toEqualTypeOf<LeaderCampaign>();
    await sql.begin(async (tx) => {
      // @ts-expect-error a session lock pins a connection of its own
      acquireSessionLock(tx, 'leader');
    });
    const reserved = await sql.reserve();
    // @ts-expect-error a reserved connection cannot reserve another
    acquireSessionLock(reserved, 'leader');
    // @ts-expect-error nor begin a transaction
    withLock(reserved, 'a', async () => 1);
  });

  it('isLocked, inspectLocks and runOnce take `sql` or a transaction', async () => {
    expectTypeOf(await isLocked(sql, 'a', { namespace: 'n' })).toEqualTypeOf<boolean>();
    await sql.begin(async (tx) => {
      expectTypeOf(await inspectLocks(tx)).toBeArray();
    });
    const result = await runOnce(sql, 'digest', { per: '1h' }, async (tx, { period }) => {
      expectTypeOf(tx).toEqualTypeOf<TransactionSql>();
      expectTypeOf(period.start).toEqualTypeOf<Date>();
      return 1;
    });
    if (result.ran) expectTypeOf(result.value).toEqualTypeOf<number>();
  });

  it('transaction settings: what `sql.begin` applies, under `transaction`', () => {
    withLock(sql, 'x', async () => 1, {
      transaction: { isolationLevel: 'serializable', accessMode: 'read only', deferrable: true },
    });
    // @ts-expect-error MSSQL's snapshot isolation is not PostgreSQL's
    withLock(sql, 'x', async () => 1, { transaction: { isolationLevel: 'snapshot' } });
    // @ts-expect-error Prisma's timeout is not a postgres.js setting
    withLock(sql, 'x', async () => 1, { transaction: { timeout: 5_000 } });
    advisoryLocks(sql, { transaction: { isolationLevel: 'repeatable read' }, timeoutMs: 1_000 });
  });
});
