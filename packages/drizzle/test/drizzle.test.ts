import { PGlite } from '@electric-sql/pglite';
import * as pgAdapter from '@pglock/pg';
import { Backdoor, countingPool, deferred } from '@pglock/test-kit';
import { drizzle as drizzleNodePg } from 'drizzle-orm/node-postgres';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { drizzle as drizzlePostgresJs } from 'drizzle-orm/postgres-js';
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  AdvisoryLockError,
  advisoryLocks,
  type DrizzleDatabaseLike,
  type DrizzleExecutes,
  type DrizzleTransactionLike,
  InvalidLockOptionsError,
  inspectLocks,
  LockAbortedError,
  lock,
  lockKey,
  tryLock,
  tryWithLock,
  withLock,
} from '../src/index.ts';
import { sqlOf } from './harness.ts';

const url = inject('databaseUrl');
const unique = (label: string) => `drizzle-test:${label}:${crypto.randomUUID()}`;
const keyOf = (name: string) => (lockKey(name) as { value: bigint }).value;

let backdoor: Backdoor;
const counted = countingPool({ connectionString: url, max: 4 });
const poolDb = drizzleNodePg({ client: counted.pool });
const postgresJs = postgres(url, { max: 4, onnotice: () => undefined });
const postgresJsDb = drizzlePostgresJs({ client: postgresJs });
const client = new pg.Client({ connectionString: url });
const clientDb = drizzleNodePg({ client });
const pglite = new PGlite();
const pgliteDb = drizzlePglite({ client: pglite });
const pgPool = new pg.Pool({ connectionString: url, max: 2 });

beforeAll(async () => {
  backdoor = await Backdoor.open(url);
  await client.connect();
});
afterAll(async () => {
  await Promise.all([backdoor.close(), counted.pool.end(), postgresJs.end(), client.end(), pglite.close()]);
  await pgPool.end();
});

describe('one lock across adapters', () => {
  it('the same name through @pglock/drizzle and @pglock/pg is one PostgreSQL lock', async () => {
    const name = unique('cross');
    const entered = deferred<number>();
    const leave = deferred();
    const held = withLock(postgresJsDb, name, async (tx) => {
      entered.resolve(Number((await sqlOf(tx)('SELECT pg_backend_pid() AS pid'))[0]?.pid));
      await leave.promise;
    });
    const pid = await entered.promise;
    expect(await backdoor.locksOn(keyOf(name))).toEqual([{ pid, granted: true, mode: 'ExclusiveLock' }]);
    expect(await pgAdapter.tryWithLock(pgPool, name, async () => 'pg')).toEqual({ acquired: false });
    expect(await pgAdapter.isLocked(pgPool, name)).toBe(true);
    leave.resolve();
    await held;
    // And the other way round: a lock held through @pglock/pg excludes Drizzle.
    await pgAdapter.withLock(pgPool, name, async () => {
      expect(await tryWithLock(poolDb, name, async () => 'drizzle')).toEqual({ acquired: false });
    });
    expect(await tryWithLock(poolDb, name, async () => 'drizzle')).toEqual({
      acquired: true,
      value: 'drizzle',
    });
  });
});

describe('Drizzle transaction config', () => {
  it('passes isolationLevel, accessMode and deferrable through to db.transaction', async () => {
    for (const db of [poolDb, postgresJsDb, clientDb] as DrizzleDatabaseLike[]) {
      const seen = await withLock(
        db,
        unique('config'),
        async (tx) =>
          (
            await sqlOf(tx as DrizzleExecutes)(
              "SELECT current_setting('transaction_isolation') AS iso, current_setting('transaction_read_only') AS ro, current_setting('transaction_deferrable') AS def",
            )
          )[0],
        { transaction: { isolationLevel: 'serializable', accessMode: 'read only', deferrable: true } },
      );
      expect(seen).toEqual({ iso: 'serializable', ro: 'on', def: 'on' });
    }
  });

  it('rejects an isolation level outside the list (Drizzle pastes it into SQL) before any SQL', async () => {
    const before = counted.count();
    const error = await withLock(poolDb, unique('bad-config'), async () => 'ran', {
      transaction: { isolationLevel: 'serializable; DROP TABLE x' as 'serializable' },
    }).catch((e: unknown) => e);
    expect(InvalidLockOptionsError.is(error)).toBe(true);
    expect(counted.count()).toBe(before);
  });

  it('refuses transaction config on a nested withLock (a savepoint cannot take it)', async () => {
    const error = await poolDb
      .transaction((tx) =>
        withLock(tx, unique('nested-config'), async () => 'ran', {
          transaction: { isolationLevel: 'serializable' },
        }),
      )
      .catch((e: unknown) => e);
    expect(InvalidLockOptionsError.is(error)).toBe(true);
  });
});

describe('nesting and misuse', () => {
  it('withLock on a tx opens a savepoint; the lock lasts until the outer transaction ends', async () => {
    const name = unique('nested');
    await postgresJsDb.transaction(async (tx) => {
      const value = await withLock(tx, name, async (inner) => {
        expect(await advisoryLocks(poolDb).isLocked(name)).toBe(true);
        return (await sqlOf(inner)('SELECT 1 AS one'))[0]?.one;
      });
      expect(value).toBe(1);
      expect(await advisoryLocks(poolDb).isLocked(name)).toBe(true);
    });
    expect(await advisoryLocks(poolDb).isLocked(name)).toBe(false);
  });

  it('lock() and tryLock() refuse a top-level database (a cast around the types) before any SQL', async () => {
    const before = counted.count();
    for (const run of [
      () => lock(poolDb as unknown as DrizzleTransactionLike, unique('misuse')),
      () => tryLock(poolDb as unknown as DrizzleTransactionLike, unique('misuse')),
    ]) {
      const error = await run().catch((e: unknown) => e);
      expect(AdvisoryLockError.is(error) && error.code).toBe('LOCK_USAGE');
    }
    expect(counted.count()).toBe(before);
  });

  it('signal is refused up front where nothing can cancel a wait (pg.Client, PGlite, plain lock(tx))', async () => {
    const signal = new AbortController().signal;
    for (const db of [clientDb, pgliteDb] as DrizzleDatabaseLike[]) {
      const error = await withLock(db, unique('no-cancel'), async () => 'ran', {
        signal,
      }).catch((e: unknown) => e);
      expect(InvalidLockOptionsError.is(error)).toBe(true);
    }
    const error = await poolDb
      .transaction((tx) => lock(tx, unique('no-cancel-tx'), { signal }))
      .catch((e: unknown) => e);
    expect(InvalidLockOptionsError.is(error)).toBe(true);
    // A single try needs no cancel, so a signal is fine there.
    expect(await tryWithLock(clientDb, unique('try'), async () => 'ok', { signal })).toEqual({
      acquired: true,
      value: 'ok',
    });
  });
});

describe('abort through advisoryLocks(db).lock(tx)', () => {
  it.each([
    ['node-postgres Pool', poolDb],
    ['postgres.js', postgresJsDb],
  ] as const)(
    '%s: the wait inside the caller\u2019s transaction is cancelled through the root database',
    async (_label, db) => {
      const name = unique('abort-tx');
      const key = keyOf(name);
      const locks = advisoryLocks(db as typeof poolDb);
      await pgAdapter.withLock(pgPool, name, async () => {
        const controller = new AbortController();
        const waiting = poolDb
          .transaction(async () => undefined)
          .then(() =>
            (db as typeof poolDb)
              .transaction((tx) => locks.lock(tx, name, { signal: controller.signal }))
              .catch((e: unknown) => e),
          );
        await backdoor.waitForWaiters(key, 1);
        controller.abort(new Error('deploy cancelled'));
        const error = await waiting;
        expect(LockAbortedError.is(error)).toBe(true);
        expect((await backdoor.locksOn(key)).filter((l) => !l.granted)).toEqual([]);
      });
    },
  );
});

describe('PGlite (one connection)', () => {
  it('lock, tryLock, multi-key and inspection work; its own locks are re-entrant', async () => {
    const name = unique('pglite');
    const locks = advisoryLocks(pgliteDb);
    const seen = await pgliteDb.transaction(async (tx) => {
      await locks.lock(tx, [name, `${name}:b`]);
      const again = await locks.tryLock(tx, name);
      // Through tx: PGlite runs one transaction at a time, so the root db would wait for this one to end.
      const inspected = await inspectLocks(tx);
      return { again, mine: inspected.filter((l) => l.ownSession && l.granted).length };
    });
    expect(seen).toEqual({ again: true, mine: 2 });
    expect(await locks.isLocked(name)).toBe(false);
    expect(await locks.withLock([name, 42n, { pair: [1, 2] }], async () => 'done', { timeoutMs: 100 })).toBe(
      'done',
    );
  });
});
