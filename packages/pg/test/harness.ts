import * as adapter from '@pglock/pg';
import { countingPool, defineHarness, type Sql } from '@pglock/test-kit';
import pg from 'pg';
import { advisoryLocks, type PgClientLike } from '../src/index.ts';

/** The package as apps import it, for the kit's verbs and exports suites. */
const adapterPackage = {
  name: '@pglock/pg',
  exports: adapter,
  readme: new URL('../README.md', import.meta.url),
};

const sqlOf =
  (client: PgClientLike): Sql =>
  async (text, values = []) => [...(await client.query(text, [...values])).rows];

const capabilities = {
  contention: true,
  multiProcess: true,
  abort: true,
  countsStatements: true,
  session: true,
  pooledTransactionHandle: true,
  transactionSettings: ['isolationLevel', 'accessMode', 'deferrable'],
} as const;

/** `@pglock/pg` over a `pg.Pool`. */
export const poolHarness = defineHarness<PgClientLike>({
  name: 'pg (Pool)',
  capabilities,
  package: adapterPackage,
  moduleUrl: import.meta.url,
  exportName: 'poolHarness',
  async open(url, { max, errorListeners }) {
    const { pool, count } = countingPool({ connectionString: url, max }, { errorListeners });
    return {
      db: pool,
      advisoryLocks: (defaults) => advisoryLocks(pool, defaults),
      locksOn: (client) => advisoryLocks(client),
      sql: sqlOf,
      async transaction(fn) {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          const result = await fn(client);
          await client.query('COMMIT');
          return result;
        } catch (error) {
          await client.query('ROLLBACK');
          throw error;
        } finally {
          client.release();
        }
      },
      statementCount: count,
      close: () => pool.end(),
    };
  },
});

/** `@pglock/pg` over one `pg.Client` (no session locks: they pin a pooled connection). */
export const clientHarness = defineHarness<PgClientLike>({
  name: 'pg (Client)',
  package: adapterPackage,
  capabilities: { ...capabilities, session: false, concurrentCalls: false },
  moduleUrl: import.meta.url,
  exportName: 'clientHarness',
  async open(url, { errorListeners }) {
    let count = 0;
    const client = new pg.Client({ connectionString: url });
    if (errorListeners) client.on('error', () => undefined);
    await client.connect();
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      count++;
      return query(...args);
    };
    return {
      db: client,
      advisoryLocks: (defaults) => advisoryLocks(client, defaults),
      locksOn: (tx) => advisoryLocks(tx),
      sql: sqlOf,
      async transaction(fn) {
        await client.query('BEGIN');
        try {
          const result = await fn(client);
          await client.query('COMMIT');
          return result;
        } catch (error) {
          await client.query('ROLLBACK');
          throw error;
        }
      },
      statementCount: () => count,
      close: () => client.end(),
    };
  },
});
