import { withLock as drizzleWithLock } from '@pglock/drizzle';
import { withLock as kyselyWithLock } from '@pglock/kysely';
import { withLock as pgWithLock } from '@pglock/pg';
import { withLock as prismaWithLock } from '@pglock/prisma';
import { countingPool } from '@pglock/test-kit';
import { PrismaPg } from '@prisma/adapter-pg';
import { eq, sql } from 'drizzle-orm';
import { drizzle as drizzleNodePg } from 'drizzle-orm/node-postgres';
import { integer, type PgDatabase, type PgQueryResultHKT, pgTable } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePostgresJs } from 'drizzle-orm/postgres-js';
import { Kysely, sql as kyselySql, PostgresDialect } from 'kysely';
import postgres from 'postgres';
import { PrismaClient } from './prisma/generated/client.ts';

/** One way of running the benchmark's transaction: `run` does it once for `row` under lock `key`. */
export interface Variant {
  readonly kind: VariantKind;
  run(row: number, key: bigint): Promise<unknown>;
}

export type VariantKind = 'withLock' | 'withLock + timeoutMs' | 'hand-written lock' | 'no lock';

/** An adapter on one driver, its variants, and a statement counter on its connections. */
export interface Subject {
  readonly name: string;
  readonly variants: readonly Variant[];
  statements(): number;
  close(): Promise<void>;
}

const counter = pgTable('bench_counter', { id: integer('id').primaryKey(), n: integer('n').notNull() });
const TIMEOUT = { timeoutMs: 5_000 } as const;
const LOCK_SQL = 'SELECT pg_advisory_xact_lock($1::text::bigint)';
const WORK = 'UPDATE bench_counter SET n = n + 1 WHERE id = $1';

/** The pglock subjects of scenario 1, each on a pool of `connections`. */
export function openSubjects(url: string, connections: number): Subject[] {
  return [
    pgSubject(url, connections),
    drizzlePg(url, connections),
    drizzlePostgres(url, connections),
    kysely(url, connections),
    prisma(url, connections),
  ];
}

function pgSubject(url: string, max: number): Subject {
  const { pool, count } = countingPool({ connectionString: url, max });
  const plain = async (row: number, key: bigint | undefined) => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      if (key !== undefined) await client.query(LOCK_SQL, [String(key)]);
      await client.query(WORK, [row]);
      await client.query('COMMIT');
    } finally {
      client.release();
    }
  };
  return {
    name: 'pg',
    variants: [
      { kind: 'withLock', run: (row, key) => pgWithLock(pool, key, (c) => c.query(WORK, [row])) },
      {
        kind: 'withLock + timeoutMs',
        run: (row, key) => pgWithLock(pool, key, (c) => c.query(WORK, [row]), TIMEOUT),
      },
      { kind: 'hand-written lock', run: (row, key) => plain(row, key) },
      { kind: 'no lock', run: (row) => plain(row, undefined) },
    ],
    statements: count,
    close: () => pool.end(),
  };
}

type AnyPgDatabase = PgDatabase<PgQueryResultHKT>;

function drizzleVariants(db: AnyPgDatabase): Variant[] {
  // A transaction is a PgDatabase too: the work is the same query builder call on either.
  const work = async (tx: AnyPgDatabase, row: number) => {
    await tx
      .update(counter)
      .set({ n: sql`${counter.n} + 1` })
      .where(eq(counter.id, row));
  };
  return [
    { kind: 'withLock', run: (row, key) => drizzleWithLock(db, key, (tx) => work(tx, row)) },
    {
      kind: 'withLock + timeoutMs',
      run: (row, key) => drizzleWithLock(db, key, (tx) => work(tx, row), TIMEOUT),
    },
    {
      kind: 'hand-written lock',
      run: (row, key) =>
        db.transaction(async (tx) => {
          await tx.execute(sql`SELECT pg_advisory_xact_lock(${String(key)}::text::bigint)`);
          await work(tx, row);
        }),
    },
    { kind: 'no lock', run: (row) => db.transaction((tx) => work(tx, row)) },
  ];
}

function drizzlePg(url: string, max: number): Subject {
  const { pool, count } = countingPool({ connectionString: url, max });
  return {
    name: 'Drizzle (node-postgres)',
    variants: drizzleVariants(drizzleNodePg({ client: pool })),
    statements: count,
    close: () => pool.end(),
  };
}

function drizzlePostgres(url: string, max: number): Subject {
  let count = 0;
  // postgres.js reports each statement it sends to `debug`: the only hook it has for counting.
  const client = postgres(url, { max, onnotice: () => undefined, debug: () => void count++ });
  return {
    name: 'Drizzle (postgres.js)',
    variants: drizzleVariants(drizzlePostgresJs({ client })),
    statements: () => count,
    close: () => client.end(),
  };
}

interface KyselyDb {
  bench_counter: { id: number; n: number };
}

function kysely(url: string, max: number): Subject {
  const { pool, count } = countingPool({ connectionString: url, max });
  const db = new Kysely<KyselyDb>({ dialect: new PostgresDialect({ pool }) });
  const work = (trx: Kysely<KyselyDb>, row: number) =>
    trx
      .updateTable('bench_counter')
      .set((eb) => ({ n: eb('n', '+', 1) }))
      .where('id', '=', row)
      .execute();
  return {
    name: 'Kysely (pg)',
    variants: [
      { kind: 'withLock', run: (row, key) => kyselyWithLock(db, key, (trx) => work(trx, row)) },
      {
        kind: 'withLock + timeoutMs',
        run: (row, key) => kyselyWithLock(db, key, (trx) => work(trx, row), TIMEOUT),
      },
      {
        kind: 'hand-written lock',
        run: (row, key) =>
          db.transaction().execute(async (trx) => {
            await kyselySql`SELECT pg_advisory_xact_lock(${String(key)}::text::bigint)`.execute(trx);
            await work(trx, row);
          }),
      },
      { kind: 'no lock', run: (row) => db.transaction().execute((trx) => work(trx, row)) },
    ],
    statements: count,
    close: () => db.destroy(),
  };
}

function prisma(url: string, max: number): Subject {
  const { pool, count } = countingPool({ connectionString: url, max });
  const client = new PrismaClient({ adapter: new PrismaPg(pool) });
  type Tx = Parameters<Parameters<typeof client.$transaction>[0]>[0];
  const work = (tx: Tx, row: number) =>
    tx.counter.update({ where: { id: row }, data: { n: { increment: 1 } } });
  return {
    name: 'Prisma (adapter-pg)',
    // Prisma's withLock always waits with a bound (the transaction's timeout), so its plain
    // withLock row already is the timeoutMs statement.
    variants: [
      {
        kind: 'withLock + timeoutMs',
        run: (row, key) => prismaWithLock(client, key, (tx) => work(tx, row), TIMEOUT),
      },
      {
        kind: 'hand-written lock',
        run: (row, key) =>
          client.$transaction(async (tx) => {
            await tx.$queryRaw`SELECT 1 AS ok FROM pg_advisory_xact_lock(${String(key)}::text::bigint)`;
            await work(tx, row);
          }),
      },
      { kind: 'no lock', run: (row) => client.$transaction((tx) => work(tx, row)) },
    ],
    statements: count,
    async close() {
      await client.$disconnect();
      await pool.end().catch(() => undefined);
    },
  };
}
