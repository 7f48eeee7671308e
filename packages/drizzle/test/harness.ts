import { PGlite } from '@electric-sql/pglite';
import type { AdapterHarness, AdapterInstance, Sql } from '@pglock/test-kit';
import { countingPool } from '@pglock/test-kit';
import { type SQL, sql } from 'drizzle-orm';
import { drizzle as drizzleNodePg } from 'drizzle-orm/node-postgres';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { drizzle as drizzlePostgresJs } from 'drizzle-orm/postgres-js';
import pg from 'pg';
import postgres from 'postgres';
import { rowsOf } from '../src/drizzle-executor.ts';
import { advisoryLocks, type DrizzleExecutes } from '../src/index.ts';

/** Test SQL with `$n` placeholders as Drizzle SQL (the suites' statements). */
export function rawSql(text: string, values: readonly unknown[] = []): SQL {
  const parts = text.split(/\$(\d+)/);
  return sql.join(
    parts.map((part, i) => (i % 2 === 0 ? sql.raw(part) : sql.param(values[Number(part) - 1]))),
  );
}

export const sqlOf =
  (handle: DrizzleExecutes): Sql =>
  async (text, values = []) =>
    rowsOf(await handle.execute(rawSql(text, values)));

type AnyPgDatabase = PgDatabase<PgQueryResultHKT>;

/** The conformance instance over any Drizzle database: the ORM's own `db.transaction` and `tx`. */
export function drizzleInstance(
  db: AnyPgDatabase,
  statementCount: () => number,
  close: () => Promise<void>,
): AdapterInstance {
  const locks = advisoryLocks(db);
  return {
    withLock: (target, fn, options) => locks.withLock(target, (tx) => fn(sqlOf(tx)), options),
    tryWithLock: (target, fn, options) => locks.tryWithLock(target, (tx) => fn(sqlOf(tx)), options),
    transaction: (fn) =>
      db.transaction((tx) =>
        fn({
          sql: sqlOf(tx),
          lock: (target, options) => locks.lock(tx, target, options),
          tryLock: (target, options) => locks.tryLock(tx, target, options),
        }),
      ),
    isLocked: (key, options) => advisoryLocks(db, options).isLocked(key),
    inspectLocks: () => locks.inspectLocks(),
    statementCount,
    close,
  };
}

/** `@pglock/drizzle` on drizzle-orm/node-postgres over a `pg.Pool`. */
export const nodePgPoolHarness: AdapterHarness = {
  name: 'drizzle (node-postgres Pool)',
  capabilities: { contention: true, multiProcess: true, abort: true, countsStatements: true },
  moduleUrl: import.meta.url,
  exportName: 'nodePgPoolHarness',
  async open(url) {
    const { pool, count } = countingPool({ connectionString: url, max: 4 });
    return drizzleInstance(drizzleNodePg({ client: pool }), count, () => pool.end());
  },
};

/**
 * `@pglock/drizzle` on drizzle-orm/node-postgres over one `pg.Client`. `abort` is false: the client
 * is the only connection, so nothing can send `pg_cancel_backend` while it waits, and `signal` is
 * refused with InvalidLockOptionsError (tested in drizzle.test.ts).
 */
export const nodePgClientHarness: AdapterHarness = {
  name: 'drizzle (node-postgres Client)',
  capabilities: { contention: true, multiProcess: true, abort: false, countsStatements: true },
  moduleUrl: import.meta.url,
  exportName: 'nodePgClientHarness',
  async open(url) {
    let count = 0;
    const client = new pg.Client({ connectionString: url });
    client.on('error', () => undefined);
    await client.connect();
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      count++;
      return query(...args);
    };
    return drizzleInstance(
      drizzleNodePg({ client }),
      () => count,
      () => client.end(),
    );
  },
};

/** `@pglock/drizzle` on drizzle-orm/postgres-js; statements counted with postgres.js's `debug` hook. */
export const postgresJsHarness: AdapterHarness = {
  name: 'drizzle (postgres.js)',
  capabilities: { contention: true, multiProcess: true, abort: true, countsStatements: true },
  moduleUrl: import.meta.url,
  exportName: 'postgresJsHarness',
  async open(url) {
    let count = 0;
    const client = postgres(url, {
      max: 4,
      onnotice: () => undefined,
      debug: () => {
        count++;
      },
    });
    return drizzleInstance(
      drizzlePostgresJs({ client }),
      () => count,
      () => client.end({ timeout: 5 }),
    );
  },
};

let shared: Promise<PGlite> | undefined;

/**
 * `@pglock/drizzle` on drizzle-orm/pglite: an in-process PostgreSQL with one connection, so no
 * second session can contend, observe or cancel, and worker processes cannot share it.
 */
export const pgliteHarness: AdapterHarness = {
  name: 'drizzle (PGlite)',
  capabilities: { contention: false, multiProcess: false, abort: false, countsStatements: false },
  moduleUrl: import.meta.url,
  exportName: 'pgliteHarness',
  async open() {
    // Starting PGlite takes seconds; one instance per test process serves every test, as one app would.
    shared ??= PGlite.create();
    return drizzleInstance(
      drizzlePglite({ client: await shared }),
      () => 0,
      async () => undefined,
    );
  },
};
