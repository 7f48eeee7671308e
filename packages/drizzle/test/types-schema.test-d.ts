// drizzle-orm 0.x's relational queries (`schema`, `tx.query.*`) keep their types in the callback.
// 1.0 replaced them (relations v2), so this file runs with the workspace's 0.45 only.
import { eq } from 'drizzle-orm';
import { drizzle as drizzleNodePg } from 'drizzle-orm/node-postgres';
import { integer, pgTable, serial, text } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePostgresJs } from 'drizzle-orm/postgres-js';
import pg from 'pg';
import postgres from 'postgres';
import { describe, expectTypeOf, it } from 'vitest';
import { advisoryLocks, type TxOf, withLock } from '../src/index.ts';

const accounts = pgTable('accounts', {
  id: serial('id').primaryKey(),
  owner: text('owner').notNull(),
  balance: integer('balance').notNull(),
});
const schema = { accounts };
const poolDb = drizzleNodePg({ client: new pg.Pool(), schema });
const postgresJsDb = drizzlePostgresJs({ client: postgres(), schema });

describe('schema', () => {
  it('tx keeps the schema: tx.query.accounts is typed', () => {
    void withLock(poolDb, 'a', async (tx) => {
      expectTypeOf(tx).toEqualTypeOf<TxOf<typeof poolDb>>();
      const row = await tx.query.accounts.findFirst({ where: eq(accounts.id, 1) });
      expectTypeOf(row).toEqualTypeOf<{ id: number; owner: string; balance: number } | undefined>();
    });
    void advisoryLocks(postgresJsDb).withLock('a', async (tx) => tx.query.accounts.findMany());
    // A helper typed with TxOf takes the callback's tx.
    const debit = async (tx: TxOf<typeof poolDb>, id: number) =>
      tx.query.accounts.findFirst({ where: eq(accounts.id, id) });
    void withLock(poolDb, 'a', (tx) => debit(tx, 1));
  });
});
