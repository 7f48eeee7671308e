// The public types, the same for every tested drizzle-orm release (scripts/test-drizzle.sh checks
// this file against 0.44's and 1.0's declarations); types-schema.test-d.ts adds 0.x's `schema`.
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import { drizzle as drizzleNodePg } from 'drizzle-orm/node-postgres';
import { integer, pgTable, serial, text } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { drizzle as drizzlePostgresJs } from 'drizzle-orm/postgres-js';
import pg from 'pg';
import postgres from 'postgres';
import { describe, expectTypeOf, it } from 'vitest';
import {
  acquireSessionLock,
  advisoryLocks,
  type DrizzleAdvisoryLocks,
  leader,
  lock,
  migrateWithLock,
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

const accounts = pgTable('accounts', {
  id: serial('id').primaryKey(),
  owner: text('owner').notNull(),
  balance: integer('balance').notNull(),
});

const poolDb = drizzleNodePg({ client: new pg.Pool() });
const clientDb = drizzleNodePg({ client: new pg.Client() });
const postgresJsDb = drizzlePostgresJs({ client: postgres() });
const pgliteDb = drizzlePglite({ client: new PGlite() });

describe('accepted databases', () => {
  it('every driver type-checks, and tx is that driver’s own transaction', () => {
    void withLock(poolDb, 'a', async (tx) => {
      expectTypeOf(tx).toEqualTypeOf<TxOf<typeof poolDb>>();
      const rows = await tx.select().from(accounts);
      expectTypeOf(rows).toEqualTypeOf<{ id: number; owner: string; balance: number }[]>();
    });
    void withLock(clientDb, 'a', async (tx) => tx.select().from(accounts));
    void withLock(postgresJsDb, 'a', async (tx) => tx.select().from(accounts));
    void withLock(pgliteDb, 'a', async (tx) => tx.select().from(accounts));
    expectTypeOf(advisoryLocks(postgresJsDb)).toEqualTypeOf<
      DrizzleAdvisoryLocks<TxOf<typeof postgresJsDb>>
    >();
  });

  it('resolves the callback value; try wraps it', () => {
    expectTypeOf(withLock(poolDb, 'a', async () => 42)).toEqualTypeOf<Promise<number>>();
    expectTypeOf(tryWithLock(pgliteDb, 'a', async () => 'x')).toEqualTypeOf<Promise<TryResult<string>>>();
    expectTypeOf(
      advisoryLocks(clientDb).withLock('a', async (tx) => tx.select().from(accounts)),
    ).toEqualTypeOf<Promise<{ id: number; owner: string; balance: number }[]>>();
  });

  it('takes transaction settings under `transaction`, typed', () => {
    void withLock(poolDb, 'a', async () => 1, {
      transaction: { isolationLevel: 'serializable', accessMode: 'read only', deferrable: true },
    });
    void advisoryLocks(poolDb, { transaction: { isolationLevel: 'repeatable read' } });
    // @ts-expect-error not an isolation level
    void withLock(poolDb, 'a', async () => 1, { transaction: { isolationLevel: 'chaos' } });
    // @ts-expect-error Prisma's timeout is not a setting Drizzle applies
    void withLock(poolDb, 'a', async () => 1, { transaction: { timeout: 5_000 } });
  });

  it('a transaction is accepted where a database is (withLock then nests with a savepoint)', () => {
    void poolDb.transaction(async (tx) => withLock(tx, 'a', async (inner) => inner.select().from(accounts)));
  });
});

describe('lock() and tryLock() need a transaction', () => {
  it('accept tx and refuse a top-level database at compile time', async () => {
    await poolDb.transaction(async (tx) => {
      await lock(tx, 'a');
      expectTypeOf(await tryLock(tx, ['a', 'b'])).toEqualTypeOf<boolean>();
      await advisoryLocks(poolDb).lock(tx, 'a', { timeoutMs: 100 });
    });
    await postgresJsDb.transaction((tx) => lock(tx, 'a'));
    await pgliteDb.transaction((tx) => tryLock(tx, 'a'));
    // @ts-expect-error a top-level database runs in autocommit: only a tx is accepted
    await lock(poolDb, 'a');
    // @ts-expect-error same for tryLock
    await tryLock(postgresJsDb, 'a');
    // @ts-expect-error and for the bound form
    await advisoryLocks(poolDb).lock(poolDb, 'a');
  });

  it('lock options do not take transaction settings (the transaction exists already)', async () => {
    await poolDb.transaction(async (tx) => {
      // @ts-expect-error transaction settings belong to withLock
      await lock(tx, 'a', { transaction: { isolationLevel: 'serializable' } });
    });
  });
});

describe('session verbs, runOnce and leader', () => {
  it('take a database, never a transaction (a session lock pins a connection of its own)', async () => {
    expectTypeOf(acquireSessionLock(poolDb, 'a')).toEqualTypeOf<Promise<SessionLock>>();
    expectTypeOf(tryAcquireSessionLock(postgresJsDb, 'a', { heartbeatMs: 500 })).toEqualTypeOf<
      Promise<SessionLock | undefined>
    >();
    expectTypeOf(withSessionLock(clientDb, 'a', async (signal) => signal.aborted)).toEqualTypeOf<
      Promise<boolean>
    >();
    await advisoryLocks(poolDb).acquireSessionLock('a');
    await poolDb.transaction(async (tx) => {
      // @ts-expect-error a transaction has no $client
      await acquireSessionLock(tx, 'a');
    });
    const campaign = leader(poolDb, 'scheduler', { onElected: ({ term, signal }) => void [term, signal] });
    void campaign.stop();
  });

  it('runOnce gives the job the database’s transaction and the period', async () => {
    const result = await runOnce(poolDb, 'job', { per: '1h' }, async (tx, { period }) => {
      expectTypeOf(tx).toEqualTypeOf<TxOf<typeof poolDb>>();
      await tx.execute(sql`SELECT 1`);
      return period.start;
    });
    if (result.ran) expectTypeOf(result.value).toEqualTypeOf<Date>();
  });
});

describe('migrateWithLock', () => {
  it('takes a database, not a transaction', async () => {
    await migrateWithLock(poolDb, { migrationsFolder: './drizzle' });
    await migrateWithLock(postgresJsDb, { migrationsFolder: './drizzle', timeoutMs: 60_000 });
    await poolDb.transaction(async (tx) => {
      // @ts-expect-error Drizzle's migrator commits on its own connection; a transaction has no $client
      await migrateWithLock(tx, { migrationsFolder: './drizzle' });
    });
  });
});
