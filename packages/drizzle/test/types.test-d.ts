import { PGlite } from '@electric-sql/pglite';
import { eq, type SQLWrapper, sql } from 'drizzle-orm';
import { drizzle as drizzleNodePg } from 'drizzle-orm/node-postgres';
import { integer, pgTable, serial, text } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { drizzle as drizzlePostgresJs } from 'drizzle-orm/postgres-js';
import pg from 'pg';
import postgres from 'postgres';
import { describe, expectTypeOf, it } from 'vitest';
import {
  advisoryLocks,
  type DrizzleAdvisoryLocks,
  lock,
  migrateWithLock,
  type TryResult,
  type TxOf,
  tryLock,
  tryWithLock,
  withLock,
} from '../src/index.ts';

const accounts = pgTable('accounts', {
  id: serial('id').primaryKey(),
  owner: text('owner').notNull(),
  balance: integer('balance').notNull(),
});
const schema = { accounts };

const poolDb = drizzleNodePg({ client: new pg.Pool(), schema });
const clientDb = drizzleNodePg({ client: new pg.Client(), schema });
const postgresJsDb = drizzlePostgresJs({ client: postgres(), schema });
const pgliteDb = drizzlePglite({ client: new PGlite(), schema });

describe('accepted databases', () => {
  it('every driver type-checks, and tx is that driver’s transaction with the schema', () => {
    void withLock(poolDb, 'a', async (tx) => {
      expectTypeOf(tx).toEqualTypeOf<TxOf<typeof poolDb>>();
      const row = await tx.query.accounts.findFirst({ where: eq(accounts.id, 1) });
      expectTypeOf(row).toEqualTypeOf<{ id: number; owner: string; balance: number } | undefined>();
    });
    void withLock(clientDb, 'a', async (tx) => tx.query.accounts.findMany());
    void withLock(postgresJsDb, 'a', async (tx) => tx.query.accounts.findMany());
    void withLock(pgliteDb, 'a', async (tx) => tx.query.accounts.findMany());
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

  it('passes Drizzle’s transaction config through, typed', () => {
    void withLock(poolDb, 'a', async () => 1, {
      transaction: { isolationLevel: 'serializable', accessMode: 'read only' },
    });
    // @ts-expect-error not an isolation level
    void withLock(poolDb, 'a', async () => 1, { transaction: { isolationLevel: 'chaos' } });
  });

  it('a transaction is accepted where a database is (withLock then opens a savepoint)', () => {
    void poolDb.transaction(async (tx) =>
      withLock(tx, 'a', async (inner) => inner.query.accounts.findMany()),
    );
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

  it('lock options do not take transaction config (the transaction exists already)', async () => {
    await poolDb.transaction(async (tx) => {
      // @ts-expect-error transaction config belongs to withLock
      await lock(tx, 'a', { transaction: { isolationLevel: 'serializable' } });
    });
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

describe('structural types stay minimal', () => {
  it('anything with execute and transaction is a database', () => {
    const custom = {
      execute: (_query: SQLWrapper | string) => Promise.resolve({ rows: [] }),
      transaction: <T>(fn: (tx: { execute: typeof sql }) => Promise<T>) => fn({ execute: sql }),
    };
    void withLock(custom, 'a', async (tx) => {
      expectTypeOf(tx).toEqualTypeOf<{ execute: typeof sql }>();
    });
  });
});
