import { AsyncResource } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { tryWithLock as pgTryWithLock, withLock as pgWithLock } from '@pglock/pg';
import { Backdoor, deferred } from '@pglock/test-kit';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  advisoryLocks,
  InvalidLockKeyError,
  InvalidLockOptionsError,
  LockAbortedError,
  LockNotAcquiredError,
  LockUsageError,
  lock,
  lockKey,
  TransactionRolledBackError,
  type TxOf,
  withLock,
} from '../src/index.ts';
import { Prisma, PrismaClient } from './generated/client.ts';
import { type OpenClientOptions, openClient, type TestClient } from './open-client.ts';

const url = inject('databaseUrl');
let backdoor: Backdoor;
let pool: pg.Pool;
const opened: { close(): Promise<void> }[] = [];

// Prisma 7.9 passes a batch's own timeout to each of its elements; before, a batch always had the client's.
const [major = 0, minor = 0] = Prisma.prismaVersion.client.split('.').map(Number);
const batchTimeoutOption = major > 7 || (major === 7 && minor >= 9);

beforeAll(async () => {
  backdoor = await Backdoor.open(url);
  await backdoor.query(
    'CREATE TABLE IF NOT EXISTS pglock_prisma_accounts (id int PRIMARY KEY, owner text NOT NULL, balance int NOT NULL)',
  );
  pool = new pg.Pool({ connectionString: url, max: 4 });
});
afterEach(async () => {
  await Promise.allSettled(opened.splice(0).map((client) => client.close()));
});
afterAll(async () => {
  await pool.end();
  await backdoor.close();
});

function open(options?: OpenClientOptions) {
  const client = openClient(url, options);
  opened.push(client);
  return client;
}

function lockName(label: string): { name: string; key: bigint } {
  const name = `prisma-test:${label}:${randomUUID()}`;
  return { name, key: (lockKey(name) as { value: bigint }).value };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const newId = () => Math.floor(Math.random() * 2 ** 30);
const ownAdvisoryLocks =
  'SELECT count(*)::int AS n FROM pg_locks WHERE locktype = $1 AND pid = pg_backend_pid()';
const accountOwner = (id: number) =>
  backdoor.query('SELECT owner FROM pglock_prisma_accounts WHERE id = $1', [id]);

/** Holds `target` from node-postgres (@pglock/pg) until `release()`. */
async function holdFromPg(target: Parameters<typeof pgWithLock>[1], options?: { shared: boolean }) {
  const entered = deferred();
  const leave = deferred();
  const done = pgWithLock(
    pool,
    target,
    async () => {
      entered.resolve();
      await leave.promise;
    },
    options,
  );
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
    expect(await accountOwner(id)).toEqual([{ owner: 'late' }]);
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

  it('an omitted timeoutMs waits at most the callback timeout, and ends in LockNotAcquiredError', async () => {
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

  it('D14: the client’s own transactionOptions are the defaults (timeout, maxWait, isolation level)', async () => {
    const { name, key } = lockName('client-options');
    const id = newId();
    const { prisma } = open({
      transactionOptions: { timeout: 800, maxWait: 3_000, isolationLevel: 'Serializable' },
    });
    const held = await holdFromPg(name);
    // No timeoutMs: the wait is bounded by the client's 800 ms, not by Prisma's default 5 s.
    const started = performance.now();
    const error = await prisma.$withLock(name, async () => 'ran').catch((e: unknown) => e);
    expect(LockNotAcquiredError.is(error) && error.timeoutMs).toBe(800);
    // The message names the method called, and the one to call instead.
    expect((error as Error).message).toMatch(/^\$withLock: .* use \$tryWithLock to skip when busy\.$/);
    expect(performance.now() - started).toBeLessThan(3_000);
    // Granted after 600 ms of waiting, the callback still gets the client's 800 ms: 1.3 s in all.
    const run = prisma.$withLock(
      name,
      async (tx) => {
        await sleep(700);
        await tx.account.create({ data: { id, owner: 'client timeout', balance: 1 } });
        return (
          await tx.$queryRawUnsafe<{ transaction_isolation: string }[]>('SHOW transaction_isolation')
        )[0];
      },
      { timeoutMs: 2_000 },
    );
    await backdoor.waitForWaiters(key, 1);
    await sleep(600);
    await held.release();
    expect(await run).toEqual({ transaction_isolation: 'serializable' });
    expect(await accountOwner(id)).toEqual([{ owner: 'client timeout' }]);
    // A call's own settings still win.
    const level = await prisma.$withLock(
      name,
      async (tx) => tx.$queryRawUnsafe<{ transaction_isolation: string }[]>('SHOW transaction_isolation'),
      { transaction: { isolationLevel: 'read committed' } },
    );
    expect(level).toEqual([{ transaction_isolation: 'read committed' }]);
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
      { transaction: { isolationLevel: 'SERIALIZABLE' } },
      { transaction: { accessMode: 'read only' } },
    ];
    for (const options of refused) {
      const error = await prisma
        .$withLock(lockName('refused').name, async () => 'ran', options as never)
        .catch((e: unknown) => e);
      expect(InvalidLockOptionsError.is(error), JSON.stringify(options)).toBe(true);
      expect((error as Error).message, JSON.stringify(options)).toMatch(/^\$withLock: /);
    }
    expect(count()).toBe(before);
    expect(
      await prisma.$withLock(lockName('largest').name, async () => 'ran', { timeoutMs: 2 ** 31 - 1 - 5_000 }),
    ).toBe('ran');
  });
});

describe('D10: one budget across both lock spaces', () => {
  it('[name, pair] with timeoutMs 500 ends in LockNotAcquiredError near 500 ms, never P2028', async () => {
    const { name } = lockName('spaces');
    const pair = { pair: [newId(), newId()] as [number, number] };
    const { prisma } = open();
    const first = await holdFromPg(name);
    const second = await holdFromPg(pair);
    const started = performance.now();
    const run = prisma
      .$withLock([name, pair], async () => 'ran', { timeoutMs: 500, transaction: { timeout: 100 } })
      .catch((e: unknown) => e);
    // The bigint key is granted after 300 ms; the pair gets only what is left of the 500 ms.
    await sleep(300);
    await first.release();
    const error = await run;
    const elapsed = performance.now() - started;
    await second.release();
    expect(LockNotAcquiredError.is(error), String(error)).toBe(true);
    expect(elapsed).toBeGreaterThanOrEqual(490);
    expect(elapsed).toBeLessThan(600 + 400);
  });
});

describe('A5: a statement that failed inside the callback', () => {
  it('control: Prisma resolves a $transaction whose COMMIT PostgreSQL answered with ROLLBACK', async () => {
    const id = newId();
    const { prisma } = open();
    const result = await prisma.$transaction(async (tx) => {
      await tx.account.create({ data: { id, owner: 'lost', balance: 1 } });
      await tx.$queryRawUnsafe('SELECT 1 / 0 AS boom').catch(() => undefined);
      return 'resolved';
    });
    expect(result).toBe('resolved');
    expect(await accountOwner(id)).toEqual([]);
  });

  it('the extension knows without a round trip: one SELECT 1 only after a failed statement', async () => {
    const { prisma, count } = open();
    const cost = async (fn: (tx: TxOf<TestClient>) => Promise<unknown>) => {
      const before = count();
      await prisma.$withLock(lockName('cost').name, fn).catch(() => undefined);
      return count() - before;
    };
    await cost(async () => undefined);
    const clean = await cost(async (tx) => tx.account.count());
    const failed = await cost(async (tx) => {
      await tx.account.count();
      await tx.$queryRawUnsafe('SELECT 1 / 0 AS boom').catch(() => undefined);
    });
    expect(failed).toBe(clean + 2); // the failed statement and the check
  });

  it('without the extension (withLock on a plain client) core checks every time, and still refuses', async () => {
    const { base, count } = open();
    const id = newId();
    const before = count();
    await withLock(base, lockName('plain').name, async () => undefined);
    expect(count() - before).toBe(4); // BEGIN, the lock, SELECT 1, COMMIT
    const error = await withLock(base, lockName('plain-failed').name, async (tx) => {
      await tx.account.create({ data: { id, owner: 'lost', balance: 1 } });
      await tx.$queryRawUnsafe('SELECT 1 / 0 AS boom').catch(() => undefined);
    }).catch((e: unknown) => e);
    expect(TransactionRolledBackError.is(error)).toBe(true);
    expect(await accountOwner(id)).toEqual([]);
  });

  it('a failure that runs outside the callback’s async context still makes the commit check', async () => {
    const id = newId();
    const { prisma } = open();
    // Bound here, outside any transaction: calls run in this context, not the callback's.
    const outside = AsyncResource.bind((fn: () => Promise<unknown>) => fn());
    const error = await prisma
      .$withLock(lockName('outside').name, async (tx) => {
        await tx.account.create({ data: { id, owner: 'lost', balance: 1 } });
        await outside(() => tx.$queryRawUnsafe('SELECT 1 / 0 AS boom').catch(() => undefined));
      })
      .catch((e: unknown) => e);
    expect(TransactionRolledBackError.is(error), String(error)).toBe(true);
    expect(await accountOwner(id)).toEqual([]);
  });

  it('a failure Prisma rolled back to its own savepoint (nested $transaction) leaves the commit alone', async (context) => {
    const { prisma } = open();
    const id = newId();
    const probe = (await prisma.$transaction(
      async (tx) => typeof (tx as { $transaction?: unknown }).$transaction,
    )) as string;
    if (probe !== 'function')
      context.skip(`Prisma ${Prisma.prismaVersion.client} has no nested transactions`);
    await prisma.$withLock(lockName('prisma-savepoint').name, async (tx) => {
      await tx.account.create({ data: { id, owner: 'kept', balance: 1 } });
      const nestable = tx as unknown as Pick<typeof prisma, '$transaction'>;
      await nestable
        .$transaction(async (inner) => inner.$queryRawUnsafe('SELECT 1 / 0 AS boom'))
        .catch(() => undefined);
    });
    expect(await accountOwner(id)).toEqual([{ owner: 'kept' }]);
  });
});

describe('$lock: the lock as the first query of a batch transaction', () => {
  it('holds the lock while the batch runs; the batch commits and releases it', async () => {
    const { name, key } = lockName('batch');
    const id = newId();
    const { prisma } = open();
    const [locked, seen] = await prisma.$transaction([
      prisma.$lock(name, { timeoutMs: 1_000 }),
      prisma.$queryRawUnsafe<{ n: number }[]>(ownAdvisoryLocks, 'advisory'),
      prisma.account.create({ data: { id, owner: 'batch', balance: 1 } }),
    ]);
    expect(locked).toBeUndefined();
    expect(seen).toEqual([{ n: 1 }]);
    expect(await accountOwner(id)).toEqual([{ owner: 'batch' }]);
    expect(await backdoor.locksOn(key)).toEqual([]);
  });

  it('not granted within timeoutMs: the batch fails with LockNotAcquiredError and writes nothing', async () => {
    const { name, key } = lockName('batch-busy');
    const id = newId();
    const { prisma } = open();
    const held = await holdFromPg(name);
    try {
      for (const timeoutMs of [300, 0]) {
        const started = performance.now();
        const error = await prisma
          .$transaction([
            prisma.$lock(name, { timeoutMs }),
            prisma.account.create({ data: { id, owner: 'unlocked', balance: 1 } }),
          ])
          .catch((e: unknown) => e);
        expect(LockNotAcquiredError.is(error), String(error)).toBe(true);
        expect((error as LockNotAcquiredError).timeoutMs).toBe(timeoutMs);
        expect((error as Error).message).toMatch(/^\$lock: /);
        expect(performance.now() - started).toBeGreaterThanOrEqual(timeoutMs - 10);
        expect(await accountOwner(id)).toEqual([]);
        expect((await backdoor.locksOn(key)).filter((l) => !l.granted)).toEqual([]);
      }
    } finally {
      await held.release();
    }
  });

  it('one budget across both lock spaces; shared locks go together', async () => {
    const { name } = lockName('batch-spaces');
    const pair = { pair: [newId(), newId()] as [number, number] };
    const { prisma } = open();
    const first = await holdFromPg(name);
    const second = await holdFromPg(pair);
    const started = performance.now();
    const run = prisma
      .$transaction([prisma.$lock([name, pair], { timeoutMs: 500 })])
      .catch((e: unknown) => e);
    await sleep(300);
    await first.release();
    const error = await run;
    expect(LockNotAcquiredError.is(error), String(error)).toBe(true);
    expect(performance.now() - started).toBeLessThan(1_000);
    await second.release();
    // Both free now: both taken, in shared mode, beside another shared holder.
    const shared = await holdFromPg([name, pair], { shared: true });
    try {
      const [, seen] = await prisma.$transaction([
        prisma.$lock([name, pair], { shared: true, timeoutMs: 0 }),
        prisma.$queryRawUnsafe<{ n: number }[]>(ownAdvisoryLocks, 'advisory'),
      ]);
      expect(seen).toEqual([{ n: 2 }]);
    } finally {
      await shared.release();
    }
  });

  it.skipIf(!batchTimeoutOption)(
    `the wait is added to the batch's timeout${batchTimeoutOption ? '' : ' (skipped: Prisma before 7.9 gives a batch the client’s timeout)'}`,
    async () => {
      const { name, key } = lockName('batch-timeout');
      const id = newId();
      const { prisma } = open({ transactionOptions: { timeout: 500 } });
      const held = await holdFromPg(name);
      const run = prisma.$transaction([
        prisma.$lock(name, { timeoutMs: 3_000 }),
        prisma.account.create({ data: { id, owner: 'late batch', balance: 1 } }),
      ]);
      await backdoor.waitForWaiters(key, 1);
      await sleep(900); // longer than the batch's own 500 ms
      await held.release();
      await run;
      expect(await accountOwner(id)).toEqual([{ owner: 'late batch' }]);
    },
  );

  it('the batch keeps its own options; another element’s error reaches the caller unchanged', async () => {
    const { name, key } = lockName('batch-options');
    const id = newId();
    const { prisma } = open();
    const [, level] = await prisma.$transaction(
      [prisma.$lock(name), prisma.$queryRawUnsafe('SHOW transaction_isolation')],
      { isolationLevel: 'Serializable' },
    );
    expect(level).toEqual([{ transaction_isolation: 'serializable' }]);
    await prisma.account.create({ data: { id, owner: 'first', balance: 1 } });
    const error = await prisma
      .$transaction([
        prisma.$lock(name),
        prisma.account.create({ data: { id, owner: 'duplicate', balance: 1 } }),
      ])
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'P2002' });
    expect(await backdoor.locksOn(key)).toEqual([]);
  });

  it('awaited alone: on the client it is LockUsageError before any SQL; on a transaction it is lock(tx)', async () => {
    const { name, key } = lockName('batch-alone');
    const { prisma, count } = open();
    await prisma.$queryRawUnsafe('SELECT 1 AS warm');
    const before = count();
    const error = await prisma.$lock(name).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(LockUsageError.is(error)).toBe(true);
    expect(count()).toBe(before);
    await prisma.$transaction(async (tx) => {
      await tx.$lock(name, { timeoutMs: 500 });
      expect(await backdoor.locksOn(key)).toHaveLength(1);
    });
    expect(await backdoor.locksOn(key)).toEqual([]);
  });

  it('bad input never throws from $lock itself: awaited it rejects; in a batch nothing is sent', async () => {
    const { name, key } = lockName('batch-bad-input');
    const id = newId();
    const { prisma, count } = open();
    await prisma.$queryRawUnsafe('SELECT 1 AS warm');
    const before = count();
    for (const [label, make, is] of [
      ["''", () => prisma.$lock(''), InvalidLockKeyError.is],
      ['timeoutMs: -1', () => prisma.$lock(name, { timeoutMs: -1 }), InvalidLockOptionsError.is],
      [
        'signal',
        () => prisma.$lock(name, { signal: AbortSignal.timeout(100) } as never),
        InvalidLockOptionsError.is,
      ],
      // The batch's transaction is Prisma's: settings given to $lock would be silently dropped.
      [
        'transaction',
        () => prisma.$lock(name, { transaction: { isolationLevel: 'serializable' } } as never),
        InvalidLockOptionsError.is,
      ],
      ['timeoutMs: null', () => prisma.$lock(name, { timeoutMs: null } as never), InvalidLockOptionsError.is],
      ['an unknown option', () => prisma.$lock(name, { timeout: 100 } as never), InvalidLockOptionsError.is],
    ] as const) {
      const element = make();
      const awaited = await element.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(is(awaited), `${label}: ${String(awaited)}`).toBe(true);
      // In a batch: Prisma asks each element to join in order; the refused lock throws as it is asked,
      // so the elements after it are never asked, and nothing of the batch is sent.
      let thrown: unknown;
      try {
        await prisma.$transaction([
          make(),
          prisma.account.create({ data: { id, owner: 'unlocked', balance: 1 } }),
        ]);
      } catch (error) {
        thrown = error;
      }
      expect(is(thrown), `${label} in a batch: ${String(thrown)}`).toBe(true);
    }
    await sleep(50); // a batch element that had joined would be sent on the next tick
    expect(count()).toBe(before);
    expect(await accountOwner(id)).toEqual([]);
    expect(await backdoor.locksOn(key)).toEqual([]);
  });
});

describe('C8: a cancel needs no connection of the exhausted pool', () => {
  it('PrismaPg made from a config (its pool out of reach): the abort still lands within 250 ms', async () => {
    const { name, key } = lockName('config-abort');
    const base = new PrismaClient({ adapter: new PrismaPg({ connectionString: url, max: 1 }) });
    const prisma = base.$extends(advisoryLocks());
    opened.push({ close: () => base.$disconnect() });
    const held = await holdFromPg(name);
    try {
      const controller = new AbortController();
      const run = prisma
        .$withLock(name, async () => 'ran', { signal: controller.signal })
        .catch((e: unknown) => e);
      await backdoor.waitForWaiters(key, 1);
      await sleep(100);
      const abortedAt = performance.now();
      controller.abort(new Error('shutting down'));
      const error = await run;
      expect(LockAbortedError.is(error), String(error)).toBe(true);
      expect(performance.now() - abortedAt).toBeLessThan(250);
      expect((await backdoor.locksOn(key)).filter((l) => !l.granted)).toEqual([]);
      // The one pooled connection is back.
      expect(await prisma.$tryWithLock(lockName('after').name, async () => 'ok')).toEqual({
        acquired: true,
        value: 'ok',
      });
    } finally {
      await held.release();
    }
  });

  it('lock(tx, …) with a signal, inside your own $transaction, is cancelled the same way', async () => {
    const { name, key } = lockName('tx-abort');
    const { prisma } = open({ max: 1 });
    const held = await holdFromPg(name);
    try {
      const controller = new AbortController();
      const run = prisma
        .$transaction(async (tx) => lock(tx, name, { signal: controller.signal, timeoutMs: 4_000 }))
        .catch((e: unknown) => e);
      await backdoor.waitForWaiters(key, 1);
      controller.abort(new Error('stop'));
      expect(LockAbortedError.is(await run)).toBe(true);
    } finally {
      await held.release();
    }
  });
});

describe('nesting and mixing', () => {
  it('tx.$withLock nests with a savepoint on the same connection, in pglock’s transaction and in yours', async () => {
    const outer = lockName('outer');
    const inner = lockName('inner');
    const { prisma } = open();
    const pid = (tx: { $queryRawUnsafe: typeof prisma.$queryRawUnsafe }) =>
      tx.$queryRawUnsafe<{ pid: number }[]>('SELECT pg_backend_pid() AS pid');
    const [a, b] = await prisma.$withLock(outer.name, async (tx) => [
      await pid(tx),
      await tx.$withLock(inner.name, pid),
    ]);
    expect(a).toEqual(b);
    const [c, d] = await prisma.$transaction(async (tx) => [
      await pid(tx),
      await tx.$withLock(inner.name, pid),
    ]);
    expect(c).toEqual(d);
    expect(await backdoor.locksOn(inner.key)).toEqual([]);
  });

  it('the extension’s default transaction settings do not stop a nested call (a call’s own do)', async () => {
    const { prisma } = open({ defaults: { transaction: { isolationLevel: 'Serializable' } } });
    const inner = lockName('defaults-inner').name;
    const level = await prisma.$withLock(lockName('defaults-outer').name, async (tx) =>
      tx.$withLock(inner, async (nested) => nested.$queryRawUnsafe('SHOW transaction_isolation')),
    );
    expect(level).toEqual([{ transaction_isolation: 'serializable' }]);
    const refused = await prisma
      .$withLock(lockName('own-settings').name, async (tx) =>
        tx.$withLock(inner, async () => 'ran', { transaction: { isolationLevel: 'Serializable' } }),
      )
      .catch((e: unknown) => e);
    expect(InvalidLockOptionsError.is(refused)).toBe(true);
  });

  it('the same name from Prisma and from @pglock/pg is the same PostgreSQL lock', async () => {
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
  });

  it('lock() refuses the root client (from JavaScript or a cast) before any SQL', async () => {
    const { prisma, count } = open();
    const before = count();
    const error = await lock(prisma as never, 'x').catch((e: unknown) => e);
    expect(LockUsageError.is(error)).toBe(true);
    expect(count()).toBe(before);
  });
});
