import { Backdoor } from '@pglock/test-kit';
import pg from 'pg';
import { afterEach, describe, expect, expectTypeOf, inject, it } from 'vitest';
import {
  AdvisoryLockError,
  InvalidLockOptionsError,
  type IsolationLevel,
  isLocked,
  LockUsageError,
  lock,
  lockKey,
  tryLock,
  withLock,
} from '../src/index.ts';

const url = inject('databaseUrl');
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

describe('@pglock/pg specifics', () => {
  it('the callback gets the pg.PoolClient running the transaction (types), at the isolation level asked', async () => {
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    closers.push(() => pool.end());
    const seen = await withLock(
      pool,
      `iso:${Math.random()}`,
      async (client) => {
        expectTypeOf(client).toEqualTypeOf<pg.PoolClient>();
        return (await client.query<{ transaction_isolation: string }>('SHOW transaction_isolation')).rows[0]
          ?.transaction_isolation;
      },
      { transaction: { isolationLevel: 'serializable' satisfies IsolationLevel } },
    );
    expect(seen).toBe('serializable');
    const error = await withLock(pool, 'iso', async () => 1, {
      transaction: { isolationLevel: 'chaos; DROP' as IsolationLevel },
    }).catch((e) => e);
    expect(InvalidLockOptionsError.is(error)).toBe(true);
  });

  it("A3: withLock on a pg.Client after the caller's BEGIN nests there and never commits the caller's transaction", async () => {
    const client = new pg.Client(url);
    await client.connect();
    closers.push(() => client.end());
    const backdoor = await Backdoor.open(url);
    closers.push(() => backdoor.close());
    const table = `pglock_nest_${Math.random().toString(36).slice(2, 10)}`;
    await backdoor.query(`CREATE TABLE ${table} (v text)`);
    closers.push(async () => void (await backdoor.query(`DROP TABLE ${table}`)));
    const name = `client-begin:${Math.random()}`;
    const key = (lockKey(name) as { value: bigint }).value;
    await client.query('BEGIN');
    await client.query(`INSERT INTO ${table} VALUES ('outer')`);
    const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
    const inner = await withLock(client, name, async (tx) => {
      expect(tx).toBe(client);
      await tx.query(`INSERT INTO ${table} VALUES ('inner')`);
      return 'nested';
    });
    expect(inner).toBe('nested');
    // Still the caller's open transaction: nothing committed, the nested lock held until it ends.
    expect(client.getTransactionStatus()).toBe('T');
    expect(await backdoor.query(`SELECT v FROM ${table}`)).toEqual([]);
    expect(await backdoor.locksOn(key)).toEqual([{ pid, granted: true, mode: 'ExclusiveLock' }]);
    await client.query('ROLLBACK');
    expect(await backdoor.query(`SELECT v FROM ${table}`)).toEqual([]);
    expect(await backdoor.locksOn(key)).toEqual([]);
  });

  it('A4: lock/tryLock take a transaction client: a pool is a type error and LockUsageError', async () => {
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    closers.push(() => pool.end());
    const name = `pool-lock:${Math.random()}`;
    // @ts-expect-error a pool runs each statement in autocommit: a transaction lock would end at once
    const locked = await lock(pool, name).catch((e: unknown) => e);
    // @ts-expect-error the same for tryLock
    const tried = await tryLock(pool, name).catch((e: unknown) => e);
    expect(LockUsageError.is(locked)).toBe(true);
    expect(LockUsageError.is(tried)).toBe(true);
    expect(await isLocked(pool, name)).toBe(false);
  });

  it('refuses a second concurrent withLock on one pg.Client instead of interleaving transactions', async () => {
    const client = new pg.Client(url);
    await client.connect();
    closers.push(() => client.end());
    let release!: () => void;
    const first = withLock(client, 'client-busy', () => new Promise<void>((resolve) => (release = resolve)));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const second = await withLock(client, 'client-busy-2', async () => 'ran').catch((e: unknown) => e);
    expect(AdvisoryLockError.is(second) && second.code).toBe('LOCK_USAGE');
    release();
    await first;
    expect(await withLock(client, 'client-busy-2', async () => 'ran')).toBe('ran');
  });

  it('a failing COMMIT (serialization failure) rejects and returns a clean connection', async () => {
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    closers.push(() => pool.end());
    const table = `pglock_serial_${Math.random().toString(36).slice(2, 10)}`;
    await pool.query(`CREATE TABLE ${table} (id int PRIMARY KEY, n int)`);
    closers.push(async () => void (await pool.query(`DROP TABLE ${table}`)));
    await pool.query(`INSERT INTO ${table} VALUES (1, 0)`);
    // Two serializable transactions under different locks that read and write the same row.
    // b reads only after a has read (a's snapshot is older than b's commit, so a's update must
    // fail); unordered, a loaded machine let b commit before a's first read, and a succeeded.
    let step!: () => void;
    const gate = new Promise<void>((resolve) => (step = resolve));
    let readByA!: () => void;
    const aRead = new Promise<void>((resolve) => (readByA = resolve));
    const a = withLock(
      pool,
      'serial-a',
      async (client) => {
        await client.query(`SELECT n FROM ${table} WHERE id = 1`);
        readByA();
        await gate;
        await client.query(`UPDATE ${table} SET n = n + 1 WHERE id = 1`);
      },
      { transaction: { isolationLevel: 'serializable' } },
    );
    const b = withLock(
      pool,
      'serial-b',
      async (client) => {
        await aRead;
        await client.query(`SELECT n FROM ${table} WHERE id = 1`);
        await client.query(`UPDATE ${table} SET n = n + 10 WHERE id = 1`);
      },
      { transaction: { isolationLevel: 'serializable' } },
    );
    await b;
    step();
    const outcome = await a.catch((e: { code?: string }) => e.code);
    expect(outcome).toBe('40001');
    const { rows } = await pool.query(
      `SELECT n, (SELECT count(*)::int FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()) AS held FROM ${table}`,
    );
    expect(rows).toEqual([{ n: 10, held: 0 }]);
  });
});
