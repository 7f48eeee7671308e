import { AsyncLocalStorage } from 'node:async_hooks';
import { PrismaPg } from '@prisma/adapter-pg';
import { eq, sql } from 'drizzle-orm';
import { drizzle as drizzleOnNodePg } from 'drizzle-orm/node-postgres';
import { integer, pgTable } from 'drizzle-orm/pg-core';
import { drizzle as drizzleOnPostgresJs } from 'drizzle-orm/postgres-js';
import { Kysely, sql as kyselySql, PostgresDialect } from 'kysely';
import pg from 'pg';
import postgres from 'postgres';
import { countStatements } from './count-statements.ts';
import { WORK_SQL } from './database.ts';

/** One way of running the benchmark's transaction: `run` does it once for `row` under lock `key`. */
export interface Variant {
  readonly kind: VariantKind;
  run(row: number, key: bigint): Promise<unknown>;
}

/**
 * The variants of scenario 1. "hand-written" is the same ORM transaction with
 * `SELECT pg_advisory_xact_lock($1)` first; "hand-written SET LOCAL" sets `lock_timeout` with its own
 * statement before that lock (what a bounded wait costs by hand). The batch kinds are Prisma's
 * `$transaction([…])` with `$lock` first (its default wait, or `timeoutMs`), or with a hand-written
 * lock query first. "work in an AsyncLocalStorage" is the hand-written lock whose work runs in a
 * store enabled just for it,
 * as pglock's nesting context is: what Node's hooks alone cost, the floor of any design that nests
 * by async context.
 */
export type VariantKind =
  | 'withLock'
  | 'withLock + timeoutMs'
  | 'hand-written lock'
  | 'hand-written lock, work in an AsyncLocalStorage'
  | 'hand-written SET LOCAL + lock'
  | 'no lock'
  | '$lock batch'
  | '$lock batch + timeoutMs'
  | 'hand-written lock batch';

/** An adapter on one driver, its variants, and a statement counter on its connections. */
export interface Subject {
  readonly name: string;
  readonly variants: readonly Variant[];
  statements(): number;
  close(): Promise<void>;
}

/** A subject that could not be opened (an adapter that does not build or import), and why. */
export interface SkippedSubject {
  readonly name: string;
  readonly skipped: string;
}

export const TIMEOUT_MS = 5_000;
const TIMEOUT = { timeoutMs: TIMEOUT_MS } as const;
// What users write: the parameter's type comes from the function (the one bigint overload).
const LOCK_SQL = 'SELECT pg_advisory_xact_lock($1)';
const SET_LOCAL_SQL = `SET LOCAL lock_timeout = '${TIMEOUT_MS}ms'`;

type Opener = (url: string, connections: number) => Promise<Subject>;

const openers: readonly (readonly [string, Opener])[] = [
  ['pg', pgSubject],
  ['Drizzle (node-postgres)', drizzleNodePg],
  ['Drizzle (postgres.js)', drizzlePostgresJs],
  ['Kysely (pg)', kyselySubject],
  ['Prisma (adapter-pg)', prismaSubject],
];

/**
 * The pglock subjects of scenario 1, each on a pool of `connections`. Each adapter is imported on its
 * own, so one that does not load is reported as skipped (with the reason) instead of ending the run.
 * `urlFor` gives each subject its URL (an `application_name` of its own, so that its backends'
 * CPU can be read).
 *
 * @example
 * ```ts
 * const subjects = await openSubjects(url, 4);
 * ```
 */
export async function openSubjects(
  url: string,
  connections: number,
  urlFor: (url: string, subject: string) => string = (u) => u,
): Promise<(Subject | SkippedSubject)[]> {
  const opened: (Subject | SkippedSubject)[] = [];
  for (const [name, open] of openers) {
    try {
      opened.push(await open(urlFor(url, name), connections));
    } catch (error) {
      opened.push({ name, skipped: String(error instanceof Error ? error.message : error).split('\n')[0]! });
    }
  }
  return opened;
}

/** A pool of `max` connections for one subject, with a count of the statements it sends. */
function countedPool(url: string, max: number): { readonly pool: pg.Pool; readonly count: () => number } {
  const pool = new pg.Pool({ connectionString: url, max });
  // An idle connection that the server ends (as the run shuts down) must not crash the process.
  pool.on('error', () => undefined);
  return { pool, count: countStatements(pool) };
}

// A store of the benchmark's own, enabled while some work runs in it and disabled when none does.
const workStore = new AsyncLocalStorage<number>();
let inWorkStore = 0;

async function inStore<T>(work: () => Promise<T>): Promise<T> {
  inWorkStore++;
  try {
    return await workStore.run(1, work);
  } finally {
    if (--inWorkStore === 0) workStore.disable();
  }
}

async function pgSubject(url: string, max: number): Promise<Subject> {
  const { withLock } = await import('@pglock/pg');
  const { pool, count } = countedPool(url, max);
  const plain = async (row: number, key: bigint | undefined, timed: boolean, stored = false) => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      if (timed) await client.query(SET_LOCAL_SQL);
      if (key !== undefined) await client.query(LOCK_SQL, [String(key)]);
      if (stored) await inStore(() => client.query(WORK_SQL, [row]));
      else await client.query(WORK_SQL, [row]);
      await client.query('COMMIT');
    } finally {
      client.release();
    }
  };
  return {
    name: 'pg',
    variants: [
      { kind: 'withLock', run: (row, key) => withLock(pool, key, (c) => c.query(WORK_SQL, [row])) },
      {
        kind: 'withLock + timeoutMs',
        run: (row, key) => withLock(pool, key, (c) => c.query(WORK_SQL, [row]), TIMEOUT),
      },
      { kind: 'hand-written lock', run: (row, key) => plain(row, key, false) },
      {
        kind: 'hand-written lock, work in an AsyncLocalStorage',
        run: (row, key) => plain(row, key, false, true),
      },
      { kind: 'hand-written SET LOCAL + lock', run: (row, key) => plain(row, key, true) },
      { kind: 'no lock', run: (row) => plain(row, undefined, false) },
    ],
    statements: count,
    close: () => pool.end(),
  };
}

// Drizzle's types are not imported statically: the subject must load even when @pglock/drizzle
// does not, and its database type is only what these calls need.
interface DrizzleDb {
  transaction<T>(fn: (tx: DrizzleDb) => Promise<T>): Promise<T>;
  execute(query: unknown): Promise<unknown>;
  update(table: unknown): { set(values: unknown): { where(condition: unknown): Promise<unknown> } };
}

async function drizzleVariants(db: DrizzleDb): Promise<Variant[]> {
  const { withLock } = (await import('@pglock/drizzle')) as unknown as {
    withLock<T>(db: DrizzleDb, key: bigint, fn: (tx: DrizzleDb) => Promise<T>, options?: object): Promise<T>;
  };
  const counter = pgTable('bench_counter', { id: integer('id').primaryKey(), n: integer('n').notNull() });
  // A transaction is a database too: the work is the same query builder call on either.
  const work = async (tx: DrizzleDb, row: number) => {
    await tx
      .update(counter)
      .set({ n: sql`${counter.n} + 1` })
      .where(eq(counter.id, row));
  };
  const handWritten =
    (timed: boolean, stored = false) =>
    (row: number, key: bigint) =>
      db.transaction(async (tx) => {
        if (timed) await tx.execute(sql.raw(SET_LOCAL_SQL));
        await tx.execute(sql`SELECT pg_advisory_xact_lock(${String(key)})`);
        if (stored) await inStore(() => work(tx, row));
        else await work(tx, row);
      });
  return [
    { kind: 'withLock', run: (row, key) => withLock(db, key, (tx) => work(tx, row)) },
    { kind: 'withLock + timeoutMs', run: (row, key) => withLock(db, key, (tx) => work(tx, row), TIMEOUT) },
    { kind: 'hand-written lock', run: handWritten(false) },
    { kind: 'hand-written lock, work in an AsyncLocalStorage', run: handWritten(false, true) },
    { kind: 'hand-written SET LOCAL + lock', run: handWritten(true) },
    { kind: 'no lock', run: (row) => db.transaction((tx) => work(tx, row)) },
  ];
}

async function drizzleNodePg(url: string, max: number): Promise<Subject> {
  const { pool, count } = countedPool(url, max);
  try {
    return {
      name: 'Drizzle (node-postgres)',
      variants: await drizzleVariants(drizzleOnNodePg({ client: pool }) as unknown as DrizzleDb),
      statements: count,
      close: () => pool.end(),
    };
  } catch (error) {
    await pool.end();
    throw error;
  }
}

async function drizzlePostgresJs(url: string, max: number): Promise<Subject> {
  let count = 0;
  // postgres.js reports each statement it sends to `debug`: the only hook it has for counting.
  const client = postgres(url, { max, onnotice: () => undefined, debug: () => void count++ });
  try {
    return {
      name: 'Drizzle (postgres.js)',
      variants: await drizzleVariants(drizzleOnPostgresJs({ client }) as unknown as DrizzleDb),
      statements: () => count,
      close: () => client.end(),
    };
  } catch (error) {
    await client.end();
    throw error;
  }
}

interface KyselyDb {
  bench_counter: { id: number; n: number };
}

async function kyselySubject(url: string, max: number): Promise<Subject> {
  const { withLock } = await import('@pglock/kysely');
  const { pool, count } = countedPool(url, max);
  const db = new Kysely<KyselyDb>({ dialect: new PostgresDialect({ pool }) });
  type Db = typeof db;
  const work = (trx: Db, row: number) =>
    trx
      .updateTable('bench_counter')
      .set((eb) => ({ n: eb('n', '+', 1) }))
      .where('id', '=', row)
      .execute();
  const handWritten =
    (timed: boolean, stored = false) =>
    (row: number, key: bigint) =>
      db.transaction().execute(async (trx) => {
        if (timed) await kyselySql.raw(SET_LOCAL_SQL).execute(trx);
        await kyselySql`SELECT pg_advisory_xact_lock(${String(key)})`.execute(trx);
        if (stored) await inStore(() => work(trx, row));
        else await work(trx, row);
      });
  return {
    name: 'Kysely (pg)',
    variants: [
      { kind: 'withLock', run: (row, key) => withLock(db, key, (trx) => work(trx as Db, row)) },
      {
        kind: 'withLock + timeoutMs',
        run: (row, key) => withLock(db, key, (trx) => work(trx as Db, row), TIMEOUT),
      },
      { kind: 'hand-written lock', run: handWritten(false) },
      { kind: 'hand-written lock, work in an AsyncLocalStorage', run: handWritten(false, true) },
      { kind: 'hand-written SET LOCAL + lock', run: handWritten(true) },
      { kind: 'no lock', run: (row) => db.transaction().execute((trx) => work(trx, row)) },
    ],
    statements: count,
    close: () => db.destroy(),
  };
}

async function prismaSubject(url: string, max: number): Promise<Subject> {
  const { advisoryLocks } = await import('@pglock/prisma');
  // Generated by main.ts before any subject opens (src/prisma/generate.ts).
  const { PrismaClient } = await import('./prisma/generated/client.ts');
  const { pool, count } = countedPool(url, max);
  const base = new PrismaClient({ adapter: new PrismaPg(pool) });
  const client = base.$extends(advisoryLocks());
  // The extension's transaction client and Prisma's own have the model the work needs.
  type Counting = { readonly counter: Pick<typeof base.counter, 'update'> };
  const update = (tx: Counting, row: number) =>
    tx.counter.update({ where: { id: row }, data: { n: { increment: 1 } } });
  const handWritten =
    (timed: boolean, stored = false) =>
    (row: number, key: bigint) =>
      base.$transaction(async (tx) => {
        if (timed) await tx.$executeRawUnsafe(SET_LOCAL_SQL);
        // Prisma cannot read a void column: users run the lock with $executeRaw, a bigint parameter.
        await tx.$executeRaw`SELECT pg_advisory_xact_lock(${key})`;
        if (stored) await inStore(() => update(tx, row));
        else await update(tx, row);
      });
  return {
    name: 'Prisma (adapter-pg)',
    // Prisma's withLock always waits with a bound (what the transaction's timer allows), so its
    // plain withLock runs the timed statement too.
    variants: [
      {
        kind: 'withLock',
        run: (row, key) => client.$withLock(key, (tx) => update(tx as unknown as Counting, row)),
      },
      {
        kind: 'withLock + timeoutMs',
        run: (row, key) => client.$withLock(key, (tx) => update(tx as unknown as Counting, row), TIMEOUT),
      },
      { kind: 'hand-written lock', run: handWritten(false) },
      { kind: 'hand-written lock, work in an AsyncLocalStorage', run: handWritten(false, true) },
      { kind: 'hand-written SET LOCAL + lock', run: handWritten(true) },
      { kind: 'no lock', run: (row) => base.$transaction((tx) => update(tx, row)) },
      {
        kind: '$lock batch',
        run: (row, key) =>
          client.$transaction([client.$lock(key), update(client as unknown as Counting, row)]),
      },
      {
        kind: '$lock batch + timeoutMs',
        run: (row, key) =>
          client.$transaction([client.$lock(key, TIMEOUT), update(client as unknown as Counting, row)]),
      },
      {
        kind: 'hand-written lock batch',
        run: (row, key) =>
          base.$transaction([base.$executeRaw`SELECT pg_advisory_xact_lock(${key})`, update(base, row)]),
      },
    ],
    statements: count,
    async close() {
      await base.$disconnect();
      await pool.end().catch(() => undefined);
    },
  };
}
