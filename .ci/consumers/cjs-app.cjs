// A CommonJS app, as a user writes one: require() of every published package, real locks against
// DATABASE_URL. Run with --no-experimental-require-module, as on Node 20.11–20.18 (no require(esm)),
// so an ESM-only file anywhere in the chain fails here. Writes a vitest-style report to argv[2].
'use strict';
const { writeFileSync } = require('node:fs');
const pg = require('pg');

const results = [];
async function check(name, fn) {
  try {
    await fn();
    results.push({ name, ok: true });
    console.log(`  ok   ${name}`);
  } catch (error) {
    results.push({ name, ok: false });
    console.log(`  FAIL ${name}\n${error?.stack ?? error}`);
  }
}
function assert(condition, message) {
  if (!condition) throw new Error(message);
}

async function main() {
  const url = process.env.DATABASE_URL;
  const run = Math.random().toString(36).slice(2);
  const pools = [];
  const newPool = () => {
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    pool.on('error', () => undefined);
    pools.push(pool);
    return pool;
  };

  await check('require() resolves every package to its CommonJS build', () => {
    for (const name of [
      '@pglock/core',
      '@pglock/core/adapter',
      '@pglock/core/drivers/node-postgres',
      '@pglock/core/drivers/postgres-js',
      '@pglock/core/internal',
      '@pglock/pg',
      '@pglock/drizzle',
      '@pglock/kysely',
      '@pglock/prisma',
      '@pglock/otel',
      '@pglock/cli',
    ]) {
      const file = require.resolve(name);
      assert(file.endsWith('.cjs'), `${name} resolved to ${file}`);
      require(name);
    }
  });

  await check('@pglock/core: lockKey', () => {
    const { lockKey } = require('@pglock/core');
    const key = lockKey('leaderboard');
    assert(key.form === 'bigint' && key.value === 7676066025365312217n, `lockKey gave ${String(key.value)}`);
  });

  await check('@pglock/pg: withLock runs the callback on a locked transaction', async () => {
    const { withLock } = require('@pglock/pg');
    const value = await withLock(newPool(), `cjs:${run}:pg`, async (client) => {
      const { rows } = await client.query(
        "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()",
      );
      return rows[0].n;
    });
    assert(value === 1, `expected 1 advisory lock held in the callback, saw ${value}`);
  });

  await check(
    '@pglock/pg: a busy lock with timeoutMs 0 is LockNotAcquiredError (is() and instanceof)',
    async () => {
      const { advisoryLocks, LockNotAcquiredError } = require('@pglock/pg');
      const holder = advisoryLocks(newPool());
      const other = advisoryLocks(newPool());
      const name = `cjs:${run}:busy`;
      let error;
      await holder.withLock(name, async () => {
        error = await other.withLock(name, async () => 'ran', { timeoutMs: 0 }).catch((e) => e);
      });
      assert(LockNotAcquiredError.is(error), `expected LockNotAcquiredError, got ${error}`);
      assert(error instanceof LockNotAcquiredError, 'instanceof fails within one copy');
    },
  );

  await check("the errors' brand holds across the CommonJS and ES module copies", async () => {
    const esm = await import('@pglock/pg');
    const { LockNotAcquiredError } = require('@pglock/pg');
    assert(esm.LockNotAcquiredError !== LockNotAcquiredError, 'expected two copies of the class');
    const name = `cjs:${run}:brand`;
    let error;
    await esm.withLock(newPool(), name, async () => {
      error = await esm.withLock(newPool(), name, async () => 'ran', { timeoutMs: 0 }).catch((e) => e);
    });
    assert(LockNotAcquiredError.is(error), 'the CommonJS is() does not recognise the ES module error');
  });

  await check('@pglock/drizzle: advisoryLocks(db).withLock on node-postgres', async () => {
    const { drizzle } = require('drizzle-orm/node-postgres');
    const { advisoryLocks } = require('@pglock/drizzle');
    const locks = advisoryLocks(drizzle({ client: newPool() }));
    assert((await locks.withLock(`cjs:${run}:drizzle`, async () => 'done')) === 'done', 'no value');
  });

  await check('@pglock/kysely: advisoryLocks(db).withLock', async () => {
    const { Kysely, PostgresDialect } = require('kysely');
    const { advisoryLocks } = require('@pglock/kysely');
    const db = new Kysely({ dialect: new PostgresDialect({ pool: newPool() }) });
    try {
      const locks = advisoryLocks(db);
      assert((await locks.withLock(`cjs:${run}:kysely`, async () => 'done')) === 'done', 'no value');
    } finally {
      await db.destroy();
    }
  });

  await check('@pglock/prisma, @pglock/otel, @pglock/cli load and export their entry points', () => {
    assert(typeof require('@pglock/prisma').advisoryLocks === 'function', '@pglock/prisma advisoryLocks');
    assert(typeof require('@pglock/otel').instrumentPglock === 'function', '@pglock/otel instrumentPglock');
    assert(typeof require('@pglock/cli').main === 'function', '@pglock/cli main');
  });

  await Promise.all(pools.map((pool) => pool.end().catch(() => undefined)));
  const passed = results.filter((r) => r.ok).length;
  writeFileSync(
    process.argv[2],
    JSON.stringify({ numPassedTests: passed, numFailedTests: results.length - passed, numPendingTests: 0 }),
  );
  process.exitCode = passed === results.length ? 0 : 1;
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
