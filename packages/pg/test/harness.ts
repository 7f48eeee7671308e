import type { AdapterHarness, AdapterInstance, Sql } from '@pglock/test-kit';
import { countingPool } from '@pglock/test-kit';
import pg from 'pg';
import { advisoryLocks, type PgClientLike } from '../src/index.ts';

const sqlOf =
  (client: PgClientLike): Sql =>
  async (text, values = []) => [...(await client.query(text, [...values])).rows];

/** The conformance harness for `@pglock/pg` over a `pg.Pool`. */
export const poolHarness: AdapterHarness = {
  name: 'pg (Pool)',
  capabilities: { contention: true, multiProcess: true, abort: true, countsStatements: true },
  moduleUrl: import.meta.url,
  exportName: 'poolHarness',
  async open(url): Promise<AdapterInstance> {
    const { pool, count } = countingPool({ connectionString: url, max: 4 });
    const locks = advisoryLocks(pool);
    return {
      withLock: (target, fn, options) => locks.withLock(target, (client) => fn(sqlOf(client)), options),
      tryWithLock: (target, fn, options) => locks.tryWithLock(target, (client) => fn(sqlOf(client)), options),
      async transaction(fn) {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          const result = await fn({
            sql: sqlOf(client),
            lock: (target, options) => locks.lock(client, target, options),
            tryLock: (target, options) => locks.tryLock(client, target, options),
          });
          await client.query('COMMIT');
          return result;
        } catch (error) {
          await client.query('ROLLBACK');
          throw error;
        } finally {
          client.release();
        }
      },
      isLocked: (key, options) => advisoryLocks(pool, options).isLocked(key),
      inspectLocks: () => locks.inspectLocks(),
      statementCount: count,
      close: () => pool.end(),
    };
  },
};

/** The conformance harness for `@pglock/pg` over one `pg.Client`. */
export const clientHarness: AdapterHarness = {
  name: 'pg (Client)',
  capabilities: { contention: true, multiProcess: true, abort: true, countsStatements: true },
  moduleUrl: import.meta.url,
  exportName: 'clientHarness',
  async open(url): Promise<AdapterInstance> {
    let count = 0;
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      count++;
      return query(...args);
    };
    const locks = advisoryLocks(client);
    return {
      withLock: (target, fn, options) => locks.withLock(target, (c) => fn(sqlOf(c)), options),
      tryWithLock: (target, fn, options) => locks.tryWithLock(target, (c) => fn(sqlOf(c)), options),
      async transaction(fn) {
        await client.query('BEGIN');
        try {
          const result = await fn({
            sql: sqlOf(client),
            lock: (target, options) => locks.lock(client, target, options),
            tryLock: (target, options) => locks.tryLock(client, target, options),
          });
          await client.query('COMMIT');
          return result;
        } catch (error) {
          await client.query('ROLLBACK');
          throw error;
        }
      },
      isLocked: (key, options) => advisoryLocks(client, options).isLocked(key),
      inspectLocks: () => locks.inspectLocks(),
      statementCount: () => count,
      close: () => client.end(),
    };
  },
};
