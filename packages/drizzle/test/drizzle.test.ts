// What is specific to @pglock/drizzle (the kit's suites cover the behaviour every adapter shares):
// recognising Drizzle's databases and transactions of each driver and drizzle-orm version, the
// plain lock(tx) on every driver, errors of a checked-out pg client, and postgres.js session locks
// on a connection of their own.
import { PGlite } from '@electric-sql/pglite';
import { Backdoor, countingPool, deferred, settlesWithin, sleep } from '@pglock/test-kit';
import { sql } from 'drizzle-orm';
import { drizzle as drizzleNodePg } from 'drizzle-orm/node-postgres';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { drizzle as drizzlePostgresJs } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  acquireSessionLock,
  advisoryLocks,
  type DrizzleDatabaseLike,
  type DrizzleTransactionLike,
  InvalidLockOptionsError,
  LockLostError,
  LockUsageError,
  lock,
  lockKey,
  tryLock,
  withLock,
} from '../src/index.ts';
import { sqlOf } from './harness.ts';

const url = inject('databaseUrl');
const unique = (label: string) => `drizzle-test:${label}:${crypto.randomUUID()}`;
const keyOf = (name: string) => (lockKey(name) as { value: bigint }).value;

let backdoor: Backdoor;
const counted = countingPool({ connectionString: url, max: 4 });
const poolDb = drizzleNodePg({ client: counted.pool });
const postgresJs = postgres(url, { max: 2, onnotice: () => undefined });
const postgresJsDb = drizzlePostgresJs({ client: postgresJs });
const pglite = new PGlite();
const pgliteDb = drizzlePglite({ client: pglite });

beforeAll(async () => {
  backdoor = await Backdoor.open(url);
});
afterAll(async () => {
  await Promise.all([backdoor.close(), counted.pool.end(), postgresJs.end({ timeout: 5 }), pglite.close()]);
});

describe('what @pglock/drizzle accepts', () => {
  it('a handle that is not a Drizzle database of a supported driver is LockUsageError, before any SQL', async () => {
    const impostor = { transaction: async <T>(fn: (tx: unknown) => Promise<T>) => fn({}) };
    expect(() => advisoryLocks(impostor)).toThrow(LockUsageError);
    const before = counted.count();
    const error = await withLock(impostor, unique('impostor'), async () => 'ran').catch((e: unknown) => e);
    expect(LockUsageError.is(error), String(error)).toBe(true);
    expect((error as Error).message).toMatch(/node-postgres.*postgres-js.*pglite/);
    expect(counted.count()).toBe(before);
  });

  it('a database made from a URL (Drizzle opens its own pg.Pool) works, session locks included', async () => {
    const db = drizzleNodePg(url);
    try {
      const name = unique('from-url');
      expect(await withLock(db, name, async (tx) => (await sqlOf(tx)('SELECT 1 AS one'))[0]?.one)).toBe(1);
      const handle = await acquireSessionLock(db, name);
      expect(await backdoor.locksOn(keyOf(name))).toEqual([
        { pid: handle.pid, granted: true, mode: 'ExclusiveLock' },
      ]);
      await handle.release();
    } finally {
      await db.$client.end();
    }
  });
});

describe('lock(tx) and tryLock(tx), the plain functions', () => {
  it.each([
    ['node-postgres', poolDb],
    ['postgres.js', postgresJsDb],
    ['PGlite', pgliteDb],
  ] as const)('%s: lock a transaction of the ORM; held until it ends', async (_driver, db) => {
    const name = unique('plain-lock');
    const seen = await (db as typeof poolDb).transaction(async (tx) => {
      await lock(tx, name, { timeoutMs: 1_000 });
      return { again: await tryLock(tx, name), mine: await advisoryLocks(tx).isLocked(name) };
    });
    expect(seen).toEqual({ again: true, mine: true });
    expect(await advisoryLocks(db as DrizzleDatabaseLike).isLocked(name)).toBe(false);
  });

  it('a database passed as a transaction (around the types) is LockUsageError before any SQL', async () => {
    const before = counted.count();
    for (const db of [poolDb, postgresJsDb, pgliteDb]) {
      for (const run of [lock, tryLock]) {
        const error = await run(db as unknown as DrizzleTransactionLike, unique('misuse')).catch(
          (e: unknown) => e,
        );
        expect(LockUsageError.is(error), String(error)).toBe(true);
      }
    }
    expect(counted.count()).toBe(before);
  });

  it('signal is refused up front on PGlite (one in-process connection: nothing can interrupt a wait)', async () => {
    const signal = new AbortController().signal;
    const inTx = await pgliteDb
      .transaction((tx) => lock(tx, unique('pglite-signal'), { signal }))
      .catch((e: unknown) => e);
    expect(InvalidLockOptionsError.is(inTx)).toBe(true);
    const outside = await withLock(pgliteDb, unique('pglite-signal'), async () => 'ran', { signal }).catch(
      (e: unknown) => e,
    );
    expect(InvalidLockOptionsError.is(outside)).toBe(true);
  });
});

describe('node-postgres', () => {
  it('a backend terminated while the callback runs no statement is an error of the call, never an unhandled one', async () => {
    // No 'error' listener of the app's: drizzle-orm 0.44/0.45 add none to the client they check out.
    const { pool } = countingPool({ connectionString: url, max: 2 }, { errorListeners: false });
    const db = drizzleNodePg({ client: pool });
    const crashes: unknown[] = [];
    const record = (error: unknown) => crashes.push(error);
    process.on('uncaughtException', record);
    try {
      const error = await withLock(db, unique('terminated'), async (tx) => {
        const [row] = await sqlOf(tx)('SELECT pg_backend_pid() AS pid');
        await backdoor.terminate(Number(row?.pid));
        await sleep(100);
      }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(Error);
      // The pool replaced the dead client.
      expect(await withLock(db, unique('after'), async () => 'ok')).toBe('ok');
      expect(crashes).toEqual([]);
    } finally {
      process.off('uncaughtException', record);
      pool.on('error', () => undefined);
      await pool.end();
    }
  });
});

describe('postgres.js session locks (a connection of their own)', () => {
  it('are held outside the app’s pool, which stays free and ends without waiting for them', async () => {
    const app = postgres(url, { max: 1, onnotice: () => undefined });
    const db = drizzlePostgresJs({ client: app });
    const name = unique('own-connection');
    const handle = await acquireSessionLock(db, name);
    // The app's only connection is not the one holding the lock.
    const [{ pid } = { pid: 0 }] = await app<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
    expect(pid).not.toBe(handle.pid);
    await handle.release();
    expect(await backdoor.locksOn(keyOf(name))).toEqual([]);
    await settlesWithin(app.end({ timeout: 5 }), 5_000, 'end()');
  });

  it('a terminated backend: the lock is lost, nothing more is written to it, the app’s pool goes on', async () => {
    const app = postgres(url, { max: 2, onnotice: () => undefined });
    const db = drizzlePostgresJs({ client: app });
    const crashes: unknown[] = [];
    const record = (error: unknown) => crashes.push(error);
    process.on('uncaughtException', record);
    try {
      const handle = await acquireSessionLock(db, unique('terminated'), { heartbeatMs: 100 });
      const lost = deferred<unknown>();
      handle.signal.addEventListener('abort', () => lost.resolve(handle.signal.reason));
      await backdoor.terminate(handle.pid);
      expect(LockLostError.is(await settlesWithin(lost.promise, 5_000, 'the lost signal'))).toBe(true);
      expect(LockLostError.is(await handle.release().catch((e: unknown) => e))).toBe(true);
      await sleep(300);
      expect((await db.execute(sql`SELECT 1 AS one`))[0]).toEqual({ one: 1 });
      expect(crashes).toEqual([]);
    } finally {
      process.off('uncaughtException', record);
      await app.end({ timeout: 5 });
    }
  });
});
