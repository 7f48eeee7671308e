// Jest with ts-jest (the default test setup of NestJS apps): each adapter imported from TypeScript
// compiled to CommonJS, and real locks against DATABASE_URL.
import { lockKey } from '@pglock/core';
import { advisoryLocks as drizzleLocks } from '@pglock/drizzle';
import { advisoryLocks as kyselyLocks } from '@pglock/kysely';
import { advisoryLocks, LockNotAcquiredError, withLock } from '@pglock/pg';
import { advisoryLocks as prismaLocks } from '@pglock/prisma';
import { drizzle } from 'drizzle-orm/node-postgres';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';

const run = Math.random().toString(36).slice(2);
const pools: pg.Pool[] = [];
function newPool(): pg.Pool {
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 2 });
  pool.on('error', () => undefined);
  pools.push(pool);
  return pool;
}
afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.end().catch(() => undefined)));
});

test('@pglock/core: lockKey', () => {
  expect(lockKey('leaderboard')).toMatchObject({ form: 'bigint', value: 7676066025365312217n });
});

test('@pglock/pg: withLock holds the lock in the callback', async () => {
  const held = await withLock(newPool(), `jest:${run}:pg`, async (client) => {
    const { rows } = await client.query(
      "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()",
    );
    return rows[0].n as number;
  });
  expect(held).toBe(1);
});

test('@pglock/pg: a busy lock is LockNotAcquiredError', async () => {
  const name = `jest:${run}:busy`;
  const other = advisoryLocks(newPool());
  let error: unknown;
  await advisoryLocks(newPool()).withLock(name, async () => {
    error = await other.withLock(name, async () => 'ran', { timeoutMs: 0 }).catch((e: unknown) => e);
  });
  expect(LockNotAcquiredError.is(error)).toBe(true);
  expect(error).toBeInstanceOf(LockNotAcquiredError);
});

test('@pglock/drizzle: advisoryLocks(db).withLock', async () => {
  const locks = drizzleLocks(drizzle({ client: newPool() }));
  await expect(locks.withLock(`jest:${run}:drizzle`, async () => 'done')).resolves.toBe('done');
});

test('@pglock/kysely: advisoryLocks(db).withLock', async () => {
  const db = new Kysely<Record<string, never>>({ dialect: new PostgresDialect({ pool: newPool() }) });
  try {
    await expect(kyselyLocks(db).withLock(`jest:${run}:kysely`, async () => 'done')).resolves.toBe('done');
  } finally {
    await db.destroy();
  }
});

test('@pglock/prisma: the extension factory loads', () => {
  expect(typeof prismaLocks).toBe('function');
});
