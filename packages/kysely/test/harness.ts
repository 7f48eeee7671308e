import { PGlite } from '@electric-sql/pglite';
import type { AdapterHarness, AdapterInstance, Sql } from '@pglock/test-kit';
import { countingPool } from '@pglock/test-kit';
import { Kysely, PostgresDialect, sql } from 'kysely';
import { PGliteDialect } from 'kysely-pglite-dialect';
import { PostgresJSDialect } from 'kysely-postgres-js';
import postgres from 'postgres';
import { advisoryLocks, type KyselyExecutorLike } from '../src/index.ts';

/** The test-kit's `Sql` (text with `$1…$n`) through Kysely's `sql`, values bound as parameters. */
export const sqlOf =
  (target: KyselyExecutorLike): Sql =>
  async (text, values = []) => {
    const parts = text
      .split(/\$\d+/)
      .flatMap((fragment, i) =>
        i < values.length ? [sql.raw(fragment), sql.val(values[i])] : [sql.raw(fragment)],
      );
    const query = sql<Record<string, unknown>>`${sql.join(parts, sql.raw(''))}`;
    return [...(await query.execute(target)).rows];
  };

/** An adapter instance over any Kysely instance; `count` and `close` come from its driver. */
export function instanceOver(
  db: Kysely<unknown>,
  count: () => number,
  close: () => Promise<void>,
): AdapterInstance {
  const locks = advisoryLocks(db);
  return {
    withLock: (target, fn, options) => locks.withLock(target, (trx) => fn(sqlOf(trx)), options),
    tryWithLock: (target, fn, options) => locks.tryWithLock(target, (trx) => fn(sqlOf(trx)), options),
    transaction: (fn) =>
      db.transaction().execute((trx) =>
        fn({
          sql: sqlOf(trx),
          lock: (target, options) => locks.lock(trx, target, options),
          tryLock: (target, options) => locks.tryLock(trx, target, options),
        }),
      ),
    isLocked: (key, options) => advisoryLocks(db, options).isLocked(key),
    inspectLocks: () => locks.inspectLocks(),
    statementCount: count,
    close,
  };
}

/** `@pglock/kysely` over Kysely's own `PostgresDialect` and a counting `pg.Pool`. */
export const postgresDialectHarness: AdapterHarness = {
  name: 'kysely (PostgresDialect)',
  capabilities: { contention: true, multiProcess: true, abort: true, countsStatements: true },
  moduleUrl: import.meta.url,
  exportName: 'postgresDialectHarness',
  async open(url) {
    const { pool, count } = countingPool({ connectionString: url, max: 4 });
    const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) });
    return instanceOver(db, count, () => db.destroy());
  },
};

/** `@pglock/kysely` over `kysely-postgres-js` (postgres.js); statements counted with its `debug` hook. */
export const postgresJsHarness: AdapterHarness = {
  name: 'kysely (postgres.js)',
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
    const db = new Kysely<unknown>({ dialect: new PostgresJSDialect({ postgres: client }) });
    return instanceOver(
      db,
      () => count,
      () => db.destroy(),
    );
  },
};

// One in-memory PGlite per process, started on first use: starting one takes seconds, and with
// one connection and no contention suites, separate instances would test nothing more.
let shared: Promise<{ pglite: PGlite; count: () => number }> | undefined;
function sharedPglite(): Promise<{ pglite: PGlite; count: () => number }> {
  shared ??= PGlite.create().then((pglite) => {
    let count = 0;
    const query = pglite.query.bind(pglite);
    pglite.query = ((...args: Parameters<typeof query>) => {
      count++;
      return query(...args);
    }) as typeof pglite.query;
    return { pglite, count: () => count };
  });
  return shared;
}

/**
 * `@pglock/kysely` over `kysely-pglite-dialect`: PostgreSQL in this process, one connection, so
 * nothing can contend (and no child process can reach it). The URL is not used; instances share
 * one in-memory database, whose `query` (what the dialect calls) counts statements; closing an
 * instance leaves it open for the next.
 */
export const pgliteHarness: AdapterHarness = {
  name: 'kysely (PGlite)',
  capabilities: { contention: false, multiProcess: false, abort: false, countsStatements: true },
  moduleUrl: import.meta.url,
  exportName: 'pgliteHarness',
  async open() {
    const { pglite, count } = await sharedPglite();
    const db = new Kysely<unknown>({ dialect: new PGliteDialect(pglite) });
    return instanceOver(db, count, async () => undefined);
  },
};
