import { randomUUID } from 'node:crypto';
import { tryWithLock as pgTryWithLock, withLock as pgWithLock } from '@pglock/pg';
import { Backdoor, deferred } from '@pglock/test-kit';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  AdvisoryLockError,
  InvalidLockOptionsError,
  LockNotAcquiredError,
  lock,
  lockKey,
  tryLock,
} from '../src/index.ts';
import { openClient } from './open-client.ts';

const url = inject('databaseUrl');
let backdoor: Backdoor;
let pool: pg.Pool;
const opened: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  backdoor = await Backdoor.open(url);
  await backdoor.query(
    'CREATE TABLE IF NOT EXISTS pglock_prisma_accounts (id int PRIMARY KEY, owner text NOT NULL, balance int NOT NULL)',
  );
  pool = new pg.Pool({ connectionString: url, max: 2 });
});
afterEach(async () => {
  await Promise.allSettled(opened.splice(0).map((client) => client.close()));
});
afterAll(async () => {
  await pool.end();
  await backdoor.close();
});

function open(max?: number) {
  const client = openClient(url, max);
  opened.push(client);
  return client;
}

function lockName(label: string): { name: string; key: bigint } {
  const name = `prisma-test:${label}:${randomUUID()}`;
  return { name, key: (lockKey(name) as { value: bigint }).value };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const newId = () => Math.floor(Math.random() * 2 ** 30);

/** Holds `name` from node-postgres (@pglock/pg) until `release()`. */
async function holdFromPg(name: string) {
  const entered = deferred();
  const leave = deferred();
  const done = pgWithLock(pool, name, async () => {
    entered.resolve();
    await leave.promise;
  });
  await entered.promise;
  return {
    release: async () => {
      leave.resolve();
      await done;
    },
  };
}

describe('timeout budget: the lock wait is added to the Prisma transaction timeout', () => {
  it('a lock granted after transaction.timeout still leaves the callback its whole timeout', async () => {
    const { name, key } = lockName('budget');
    const id = newId();
    const { prisma } = open();
    const held = await holdFromPg(name);
    const run = prisma.$withLock(
      name,
      async (tx) => {
        await tx.account.create({ data: { id, owner: 'late', balance: 1 } });
        await sleep(600);
        return tx.account.count({ where: { id } });
      },
      { timeoutMs: 3_000, transaction: { timeout: 1_000 } },
    );
    await backdoor.waitForWaiters(key, 1);
    await sleep(1_200); // longer than transaction.timeout: Prisma alone would have expired the transaction
    await held.release();
    expect(await run).toBe(1);
    expect(await backdoor.query('SELECT owner FROM pglock_prisma_accounts WHERE id = $1', [id])).toEqual([
      { owner: 'late' },
    ]);
  });

  it('control: the same wait in a plain $transaction with that timeout ends in P2028', async () => {
    const { name, key } = lockName('budget-control');
    const { prisma } = open();
    const held = await holdFromPg(name);
    const run = prisma
      .$transaction(
        async (tx) => {
          await lock(tx, name, { timeoutMs: 3_000 });
          await sleep(600);
          return tx.account.count();
        },
        { timeout: 1_000 },
      )
      .catch((error: unknown) => error);
    await backdoor.waitForWaiters(key, 1);
    await sleep(1_200);
    await held.release();
    expect(await run).toMatchObject({ code: 'P2028' });
  });

  it('an omitted timeoutMs waits at most transaction.timeout, and ends in LockNotAcquiredError', async () => {
    const { name, key } = lockName('default-wait');
    const { prisma } = open();
    const held = await holdFromPg(name);
    try {
      const started = performance.now();
      const error = await prisma
        .$withLock(name, async () => 'ran', { transaction: { timeout: 700 } })
        .catch((e: unknown) => e);
      expect(LockNotAcquiredError.is(error)).toBe(true);
      expect((error as LockNotAcquiredError).timeoutMs).toBe(700);
      expect(performance.now() - started).toBeGreaterThanOrEqual(690);
      expect((await backdoor.locksOn(key)).filter((l) => !l.granted)).toEqual([]);
    } finally {
      await held.release();
    }
  });

  it('refuses, before any SQL, a wait plus timeout that Prisma cannot time, and bad transaction options', async () => {
    const { prisma, count } = open();
    await prisma.$withLock(lockName('warm-up').name, async () => undefined);
    const before = count();
    const refused = [
      { timeoutMs: 2 ** 31 - 1 },
      { timeoutMs: 2 ** 31 - 1 - 4_999 },
      { timeoutMs: 10, transaction: { timeout: 2 ** 31 - 1 } },
      { transaction: { timeout: 0 } },
      { transaction: { timeout: 1.5 } },
      { transaction: { maxWait: -1 } },
      { transaction: { isolationLevel: 'serializable' } },
    ];
    for (const options of refused) {
      const error = await prisma
        .$withLock(lockName('refused').name, async () => 'ran', options as never)
        .catch((e: unknown) => e);
      expect(InvalidLockOptionsError.is(error), JSON.stringify(options)).toBe(true);
      const tried = await prisma
        .$tryWithLock('x', async () => 'ran', options as never)
        .catch((e: unknown) => e);
      if (options.timeoutMs === undefined || options.timeoutMs > 2 ** 31 - 1 - 5_000)
        expect(InvalidLockOptionsError.is(tried), JSON.stringify(options)).toBe(true);
    }
    expect(count()).toBe(before);
    // The largest accepted combination runs.
    expect(
      await prisma.$withLock(lockName('largest').name, async () => 'ran', { timeoutMs: 2 ** 31 - 1 - 5_000 }),
    ).toBe('ran');
  });
});

describe('transaction options', () => {
  it('isolationLevel passes through to the transaction', async () => {
    const { prisma } = open();
    const level = async (options?: object) =>
      prisma.$withLock(
        lockName('isolation').name,
        async (tx) =>
          ((await tx.$queryRawUnsafe('SHOW transaction_isolation')) as { transaction_isolation: string }[])[0]
            ?.transaction_isolation,
        options,
      );
    expect(await level()).toBe('read committed');
    expect(await level({ transaction: { isolationLevel: 'Serializable' } })).toBe('serializable');
    expect(await level({ transaction: { isolationLevel: 'RepeatableRead' } })).toBe('repeatable read');
    const tried = await prisma.$tryWithLock(
      lockName('isolation-try').name,
      async (tx) => tx.$queryRawUnsafe('SHOW transaction_isolation'),
      { transaction: { isolationLevel: 'Serializable' } },
    );
    expect(tried).toEqual({ acquired: true, value: [{ transaction_isolation: 'serializable' }] });
  });
});

describe('rollback', () => {
  it('an error thrown in the callback rolls back the model writes, releases the lock, and reaches the caller unchanged', async () => {
    const { name, key } = lockName('rollback');
    const id = newId();
    const { prisma } = open();
    const failure = new Error('after the write');
    const error = await prisma
      .$withLock(name, async (tx) => {
        await tx.account.create({ data: { id, owner: 'rolled back', balance: 5 } });
        expect(await backdoor.locksOn(key)).toHaveLength(1);
        throw failure;
      })
      .catch((e: unknown) => e);
    expect(error).toBe(failure);
    expect(await backdoor.query('SELECT id FROM pglock_prisma_accounts WHERE id = $1', [id])).toEqual([]);
    expect(await backdoor.locksOn(key)).toEqual([]);
  });
});

describe('the same name from Prisma and from @pglock/pg is the same PostgreSQL lock', () => {
  it('a lock held by @pglock/pg excludes Prisma, and one held by Prisma excludes @pglock/pg', async () => {
    const { name } = lockName('cross');
    const { prisma } = open();
    const held = await holdFromPg(name);
    try {
      expect(await prisma.$tryWithLock(name, async () => 'ran')).toEqual({ acquired: false });
    } finally {
      await held.release();
    }
    const inside = await prisma.$withLock(name, async () => pgTryWithLock(pool, name, async () => 'ran'));
    expect(inside).toEqual({ acquired: false });
    expect(await pgTryWithLock(pool, name, async () => 'free')).toEqual({ acquired: true, value: 'free' });
  });
});

describe('misuse', () => {
  it('lock and tryLock refuse the root client (from JavaScript or a cast) before any SQL', async () => {
    const { prisma, count } = open();
    const before = count();
    for (const call of [lock, tryLock]) {
      const error = await call(prisma as never, 'x').catch((e: unknown) => e);
      expect(AdvisoryLockError.is(error) && error.code).toBe('LOCK_USAGE');
    }
    expect(count()).toBe(before);
  });

  it('lock(tx, …) with a signal is refused: it has no second client to cancel through', async () => {
    const { prisma } = open();
    const error = await prisma
      .$transaction(async (tx) => lock(tx, 'x', { signal: new AbortController().signal, timeoutMs: 100 }))
      .catch((e: unknown) => e);
    expect(InvalidLockOptionsError.is(error)).toBe(true);
  });

  it('lock(tx, …) works in a nested $transaction (a savepoint) and holds until the outer transaction ends', async () => {
    const { name, key } = lockName('nested');
    const { prisma } = open();
    await prisma.$transaction(async (tx) => {
      await tx.$transaction(async (inner) => lock(inner, name));
      expect(await backdoor.locksOn(key)).toHaveLength(1);
    });
    expect(await backdoor.locksOn(key)).toEqual([]);
  });
});
