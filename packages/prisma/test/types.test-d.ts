import { PrismaPg } from '@prisma/adapter-pg';
import { describe, expectTypeOf, it } from 'vitest';
import {
  advisoryLocks,
  isLocked,
  lock,
  type TryResult,
  type TxOf,
  tryLock,
  tryWithLock,
  withLock,
} from '../src/index.ts';
import { PrismaClient } from './generated/client.ts';

type Account = { id: number; owner: string; balance: number };

const base = new PrismaClient({ adapter: new PrismaPg({ connectionString: 'postgres://localhost/x' }) });
const other = {
  client: { $hello: () => 'hi' as const },
  model: {
    account: {
      async richest() {
        return 1_000;
      },
    },
  },
};
const prisma = base.$extends(other).$extends(advisoryLocks({ namespace: 'app' }));
const lockedFirst = base.$extends(advisoryLocks()).$extends(other);

describe('the extension on a generated client', () => {
  it("$runOnce gives the period and missed; 'too-soon' is typed only with minIntervalMs", async () => {
    const plain = await prisma.$runOnce('job', { per: '1h' }, async (_tx, { period, missed }) => {
      expectTypeOf(period.start).toEqualTypeOf<Date>();
      expectTypeOf(missed).toEqualTypeOf<number>();
      return 1;
    });
    if (plain.ran) expectTypeOf(plain.value).toEqualTypeOf<number>();
    else expectTypeOf(plain.reason).toEqualTypeOf<'done' | 'busy'>();
    const spaced = await prisma.$runOnce('job', { cron: '0 3 * * *', minIntervalMs: 1_000 }, async () => 1);
    if (!spaced.ran) expectTypeOf(spaced.reason).toEqualTypeOf<'done' | 'busy' | 'too-soon'>();
  });

  it('$withLock resolves the callback value; tx keeps models and other extensions', () => {
    const result = prisma.$withLock('k', async (tx) => {
      expectTypeOf(tx.$hello()).toEqualTypeOf<'hi'>();
      expectTypeOf(await tx.account.richest()).toEqualTypeOf<number>();
      return tx.account.findMany();
    });
    expectTypeOf(result).toEqualTypeOf<Promise<Account[]>>();
    // Extensions added after pglock are there too: `this` is the final client.
    void lockedFirst.$withLock('k', async (tx) => {
      expectTypeOf(tx.$hello()).toEqualTypeOf<'hi'>();
      return tx.account.richest();
    });
  });

  it('$tryWithLock wraps the value in TryResult', () => {
    expectTypeOf(prisma.$tryWithLock(1n, async (tx) => tx.account.count())).toEqualTypeOf<
      Promise<TryResult<number>>
    >();
  });

  it('tx is a transaction client: no $extends, $connect or $disconnect, and not any', () => {
    void prisma.$withLock('k', async (tx) => {
      // @ts-expect-error Prisma denies $extends inside a transaction
      tx.$extends;
      // @ts-expect-error no $connect on a transaction client
      tx.$connect;
      // @ts-expect-error tx is typed, not any
      tx.account.nope();
      expectTypeOf(tx).toEqualTypeOf<TxOf<typeof prisma>>();
    });
  });

  it('options: core options plus Prisma transaction options, checked', () => {
    void prisma.$withLock('k', async () => 1, {
      timeoutMs: 1_000,
      shared: true,
      signal: AbortSignal.timeout(5_000),
      transaction: { maxWait: 1_000, timeout: 10_000, isolationLevel: 'Serializable' },
    });
    // Prisma's names and PostgreSQL's are both accepted; others are not.
    void prisma.$withLock('k', async () => 1, { transaction: { isolationLevel: 'serializable' } });
    // @ts-expect-error not an isolation level
    void prisma.$withLock('k', async () => 1, { transaction: { isolationLevel: 'SERIALIZABLE' } });
    // @ts-expect-error Prisma cannot open a read-only transaction
    void prisma.$withLock('k', async () => 1, { transaction: { accessMode: 'read only' } });
    // @ts-expect-error keys are names, numbers, bigints, pairs or arrays of them
    void prisma.$withLock({ nope: true }, async () => 1);
  });
});

describe('$lock in a batch transaction', () => {
  it('is a PrismaPromise<undefined>: the batch result keeps the other queries’ types', () => {
    const batch = prisma.$transaction([prisma.$lock('k', { timeoutMs: 500 }), prisma.account.findMany()]);
    expectTypeOf(batch).toEqualTypeOf<Promise<[undefined, Account[]]>>();
    void prisma.$transaction([prisma.$lock(['a', { pair: [1, 2] }], { shared: true })], {
      isolationLevel: 'Serializable',
    });
  });

  it('takes no signal (nothing could cancel it there), and is awaited on tx as lock(tx)', () => {
    // @ts-expect-error no signal in a batch
    void prisma.$lock('k', { signal: AbortSignal.timeout(1) });
    void prisma.$transaction(async (tx) => {
      expectTypeOf(tx.$lock('k')).toMatchTypeOf<Promise<undefined>>();
    });
  });
});

describe('tx helpers: TxOf<typeof prisma>', () => {
  it('types a helper taking the extended transaction client (Prisma.TransactionClient does not fit)', () => {
    async function debit(tx: TxOf<typeof prisma>, id: number) {
      await tx.account.update({ where: { id }, data: { balance: { decrement: 10 } } });
      return tx.$hello();
    }
    void prisma.$withLock('k', (tx) => debit(tx, 1));
    void prisma.$transaction((tx) => debit(tx, 1));
  });
});

describe('plain functions', () => {
  it('withLock and tryWithLock give the client’s transaction client', () => {
    expectTypeOf(withLock(base, 'k', async (tx) => tx.account.findMany())).toEqualTypeOf<
      Promise<Account[]>
    >();
    void withLock(prisma, 'k', async (tx) => {
      expectTypeOf(tx).toEqualTypeOf<TxOf<typeof prisma>>();
      return tx.$hello();
    });
    expectTypeOf(tryWithLock(base, 'k', async () => 'v' as const)).toEqualTypeOf<Promise<TryResult<'v'>>>();
  });

  it('lock and tryLock take a transaction client, never the root client', () => {
    void base.$transaction(async (tx) => {
      expectTypeOf(lock(tx, 'k')).toEqualTypeOf<Promise<void>>();
      expectTypeOf(tryLock(tx, ['a', 'b'])).toEqualTypeOf<Promise<boolean>>();
    });
    void prisma.$withLock('k', async (tx) => lock(tx, 'other'));
    // @ts-expect-error the root client runs each query on any pooled connection
    void lock(base, 'k');
    // @ts-expect-error an extended root client neither
    void tryLock(prisma, 'k');
  });

  it('isLocked accepts the client or a transaction client', () => {
    expectTypeOf(isLocked(prisma, 'k')).toEqualTypeOf<Promise<boolean>>();
    void base.$transaction(async (tx) => isLocked(tx, 'k', { namespace: 'app' }));
  });
});
