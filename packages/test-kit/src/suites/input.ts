import { InvalidLockKeyError, InvalidLockOptionsError, type LockKeyInput, lockKey } from '@pglock/core';
import { describe, expect, it } from 'vitest';
import { holdLock, missing, type SuiteContext } from '../context.ts';

const invalidKeys: [string, unknown][] = [
  ['empty name', ''],
  ['lone surrogate', 'a\uD800b'],
  ['NaN', Number.NaN],
  ['float', 1.5],
  ['unsafe integer', 2 ** 53],
  ['bigint above int64', 2n ** 63n],
  ['bigint below int64', -(2n ** 63n) - 1n],
  ['pair member above int32', { pair: [2 ** 31, 0] }],
  ['pair of three', { pair: [1, 2, 3] }],
  ['empty array', []],
  ['null', null],
  ['undefined', undefined],
  ['plain object', {}],
  ['boolean', true],
  ['nested array', [['a']]],
];

/** Bad input fails before any SQL; hostile names are just names; the cost of one withLock. */
export function inputSuite(ctx: SuiteContext): void {
  const { capabilities } = ctx.harness;
  const noCount = missing(capabilities, 'countsStatements', 'the adapter cannot count statements');
  const noContention = missing(
    capabilities,
    'contention',
    'one connection only: no second session to look from',
  );

  describe('input', () => {
    it.each(invalidKeys)('rejects %s with InvalidLockKeyError before any SQL', async (_label, input) => {
      const instance = await ctx.open();
      const before = instance.statementCount();
      let ran = false;
      const error = await instance
        .withLock(input as LockKeyInput, async () => {
          ran = true;
        })
        .catch((e: unknown) => e);
      expect(InvalidLockKeyError.is(error)).toBe(true);
      expect(ran).toBe(false);
      if (capabilities.countsStatements) expect(instance.statementCount()).toBe(before);
    });

    it('rejects bad options with InvalidLockOptionsError before any SQL', async () => {
      const instance = await ctx.open();
      const before = instance.statementCount();
      // null, which JavaScript callers pass for "nothing", is bad input too: `timeoutMs: null` read as
      // "not given" would wait without limit.
      const nulls = [{ timeoutMs: null }, { shared: null }, { signal: null }, { maxKeys: null }];
      for (const options of [
        { timeoutMs: -1 },
        { timeoutMs: 1.5 },
        { timeoutMs: 2 ** 31 },
        { maxKeys: 0 },
        ...nulls,
      ]) {
        let ran = false;
        const error = await instance
          .withLock(
            'valid',
            async () => {
              ran = true;
            },
            options as unknown as { timeoutMs?: number },
          )
          .catch((e: unknown) => e);
        expect(InvalidLockOptionsError.is(error), JSON.stringify(options)).toBe(true);
        expect(ran).toBe(false);
      }
      const badNamespace = await instance
        .withLock('valid', async () => undefined, { namespace: null } as unknown as { namespace?: string })
        .catch((e: unknown) => e);
      expect(InvalidLockKeyError.is(badNamespace)).toBe(true);
      const tooMany = Array.from({ length: 65 }, (_, i) => `k${i}`);
      expect(
        InvalidLockKeyError.is(
          await instance.withLock(tooMany, async () => undefined).catch((e: unknown) => e),
        ),
      ).toBe(true);
      if (capabilities.countsStatements) expect(instance.statementCount()).toBe(before);
    });

    it('an unknown option is InvalidLockOptionsError naming it and what was meant, before any SQL (it used to be ignored)', async () => {
      const instance = await ctx.open();
      await instance.isLocked(ctx.name('warm').name);
      const before = instance.statementCount();
      const { name } = ctx.name('unknown-option');
      // Misplaced: the setting lives under `transaction`; ignored, the callback ran at read committed.
      let level: unknown;
      const misplaced = await instance
        .withLock(
          name,
          async (sql) => {
            level = (await sql('SHOW transaction_isolation'))[0]?.transaction_isolation;
          },
          { isolationLevel: 'serializable' } as never,
        )
        .catch((e: unknown) => e);
      expect(level, 'the callback ran, at the default isolation level').toBeUndefined();
      expect(InvalidLockOptionsError.is(misplaced), String(misplaced)).toBe(true);
      expect((misplaced as Error).message).toMatch(
        /^\$?withLock: unknown option `isolationLevel` \(did you mean `transaction\.isolationLevel`\?\)/,
      );
      // Another library's option (ShedLock's): the message names pglock's, and lists what runOnce takes.
      const foreign = await instance.locks
        .runOnce(name, { per: '1h', lockAtMostFor: '10m' } as never, async () => 'ran')
        .catch((e: unknown) => e);
      expect(InvalidLockOptionsError.is(foreign), String(foreign)).toBe(true);
      expect((foreign as Error).message).toMatch(
        /^runOnce: unknown option `lockAtMostFor` \(did you mean `maxRunMs`\?\); the options of runOnce are per, cron, timeZone, timeoutMs, signal, namespace, transaction, minIntervalMs, catchUp, maxRunMs, retry\./,
      );
      // A typo inside `transaction`, and in the factory's defaults (thrown where the factory is made).
      const typo = await instance
        .withLock(name, async () => 'ran', { transaction: { isolation: 'serializable' } } as never)
        .catch((e: unknown) => e);
      expect((typo as Error).message).toMatch(
        /unknown setting `transaction\.isolation` \(did you mean `transaction\.isolationLevel`\?\)/,
      );
      expect(() => instance.advisoryLocks({ timeout_ms: 500 } as never)).toThrow(
        /^advisoryLocks: unknown option `timeout_ms` \(did you mean `timeoutMs`\?\)/,
      );
      if (capabilities.countsStatements) expect(instance.statementCount()).toBe(before);
    });

    it.skipIf(noContention)(
      `names with quotes, backslashes, NUL, emoji and SQL are just names${noContention ? ` (skipped: ${noContention})` : ''}`,
      async () => {
        const table = ctx.table();
        await ctx.backdoor.query(`CREATE TABLE ${table}_rows (v text)`);
        const instance = await ctx.open();
        const names = [
          `'; DROP TABLE ${table}_rows; --`,
          `"quoted" \\ $1 \${x} %s`,
          'nul\u0000inside',
          '🔒 emoji',
          'x'.repeat(10_000),
        ];
        for (const name of names) {
          const key = (lockKey(name) as { value: bigint }).value;
          const held = await holdLock(instance, name);
          try {
            expect(await ctx.backdoor.locksOn(key)).toEqual([
              { pid: held.pid, granted: true, mode: 'ExclusiveLock' },
            ]);
          } finally {
            await held.release();
          }
        }
        expect(await ctx.backdoor.query(`SELECT count(*)::int AS n FROM ${table}_rows`)).toEqual([{ n: 0 }]);
      },
    );
  });

  describe.skipIf(noCount)(`round trips${noCount ? ` (skipped: ${noCount})` : ''}`, () => {
    it('withLock adds exactly one statement to a bare transaction, also with a timeout', async () => {
      const instance = await ctx.open();
      const cost = async (run: () => Promise<unknown>) => {
        const before = instance.statementCount();
        await run();
        return instance.statementCount() - before;
      };
      await instance.transaction(async () => undefined); // warm up the pool
      const bare = await cost(() => instance.transaction(async () => undefined));
      const plain = await cost(() => instance.withLock(ctx.name('rt').name, async () => undefined));
      const timed = await cost(() =>
        instance.withLock(ctx.name('rt-timeout').name, async () => undefined, { timeoutMs: 500 }),
      );
      const tried = await cost(() => instance.tryWithLock(ctx.name('rt-try').name, async () => undefined));
      console.info(
        `[${ctx.harness.name}] statements: bare transaction ${bare}, withLock ${plain}, with timeout ${timed}, tryWithLock ${tried}`,
      );
      // A callback whose statements all succeeded needs no pre-commit check on any port.
      expect(plain).toBe(bare + 1);
      expect(timed).toBe(bare + 1);
      expect(tried).toBe(bare + 1);
    });
  });
}
