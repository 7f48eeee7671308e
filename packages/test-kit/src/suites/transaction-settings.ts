import { InvalidLockOptionsError, type TransactionSettings } from '@pglock/core';
import type { TransactionSettingName } from '@pglock/core/adapter';
import { describe, expect, it } from 'vitest';
import { missing, type SuiteContext, skipped } from '../context.ts';
import type { Sql } from '../harness.ts';

const ALL: readonly TransactionSettingName[] = [
  'isolationLevel',
  'accessMode',
  'deferrable',
  'timeout',
  'maxWait',
];

// A valid value of each setting, for "supported or refused" checks.
const SAMPLE: Required<TransactionSettings> = {
  isolationLevel: 'repeatable read',
  accessMode: 'read only',
  deferrable: false,
  timeout: 10_000,
  maxWait: 2_000,
};

async function shown(sql: Sql): Promise<{ isolation: unknown; readOnly: unknown; deferrable: unknown }> {
  const [row] = await sql(
    "SELECT current_setting('transaction_isolation') AS isolation, current_setting('transaction_read_only') AS read_only, current_setting('transaction_deferrable') AS deferrable",
  );
  return { isolation: row?.isolation, readOnly: row?.read_only, deferrable: row?.deferrable };
}

/**
 * Transaction settings (issue 13 item 4): one `transaction: { … }` option, applied to the
 * transaction withLock opens, validated before any SQL, refused on a call that nests.
 */
export function transactionSettingsSuite(ctx: SuiteContext): void {
  const { capabilities } = ctx.harness;
  const supported = capabilities.transactionSettings ?? ['isolationLevel'];
  const noCount = missing(capabilities, 'countsStatements', 'the adapter cannot count statements');
  const noAccessMode = supported.includes('accessMode') ? undefined : 'the adapter does not apply accessMode';

  describe(`transaction settings (${supported.join(', ')})`, () => {
    it('isolationLevel opens the transaction at that level, in PostgreSQL’s words or Prisma’s', async () => {
      const instance = await ctx.open();
      const { name } = ctx.name('isolation');
      for (const [given, level] of [
        ['serializable', 'serializable'],
        ['repeatable read', 'repeatable read'],
        ['read committed', 'read committed'],
        ['Serializable', 'serializable'],
        ['RepeatableRead', 'repeatable read'],
      ] as const) {
        const seen = await instance.withLock(name, shown, { transaction: { isolationLevel: given } });
        expect(seen.isolation, given).toBe(level);
        const tried = await instance.tryWithLock(name, shown, { transaction: { isolationLevel: given } });
        expect(tried.acquired && tried.value.isolation, given).toBe(level);
      }
    });

    it('factory defaults apply; a per-call setting wins; undefined keeps the default', async () => {
      const instance = await ctx.open();
      const { name } = ctx.name('isolation-defaults');
      const locks = instance.advisoryLocks({ transaction: { isolationLevel: 'serializable' } });
      const sql = (tx: unknown) => shown(instance.sqlOn(tx));
      expect((await locks.withLock(name, sql)).isolation).toBe('serializable');
      expect(
        (await locks.withLock(name, sql, { transaction: { isolationLevel: 'repeatable read' } })).isolation,
      ).toBe('repeatable read');
      expect(
        (await locks.withLock(name, sql, { transaction: { isolationLevel: undefined } })).isolation,
      ).toBe('serializable');
      // Without settings the server's default applies.
      const [row] = await ctx.backdoor.query(
        "SELECT current_setting('default_transaction_isolation') AS level",
      );
      expect((await instance.withLock(name, shown)).isolation).toBe(row?.level);
    });

    it.skipIf(noAccessMode)(
      `accessMode 'read only' makes a read-only transaction${skipped(noAccessMode)}`,
      async () => {
        const instance = await ctx.open();
        const { name } = ctx.name('read-only');
        const seen = await instance.withLock(name, shown, { transaction: { accessMode: 'read only' } });
        expect(seen.readOnly).toBe('on');
        if (supported.includes('deferrable')) {
          const deferred = await instance.withLock(name, shown, {
            transaction: { isolationLevel: 'serializable', accessMode: 'read only', deferrable: true },
          });
          expect(deferred).toEqual({ isolation: 'serializable', readOnly: 'on', deferrable: 'on' });
        }
      },
    );

    it('bad values and unsupported settings are InvalidLockOptionsError before any SQL', async () => {
      const instance = await ctx.open();
      const { name, key } = ctx.name('bad-settings');
      const bad: unknown[] = [
        'serializable',
        null,
        [],
        { isolationLevel: 'chaos; DROP TABLE x' },
        { isolationLevel: 'SERIALIZABLE' },
        { isolationLevel: 'toString' },
        { accessMode: 'sideways' },
        { deferrable: 'yes' },
        { timeout: -1 },
        { maxWait: 1.5 },
        ...ALL.filter((s) => !supported.includes(s)).map((s) => ({ [s]: SAMPLE[s] })),
      ];
      const before = instance.statementCount();
      let ran = false;
      for (const transaction of bad) {
        for (const verb of ['withLock', 'tryWithLock'] as const) {
          const error = await instance[verb](
            name,
            async () => {
              ran = true;
            },
            { transaction: transaction as TransactionSettings },
          ).catch((e: unknown) => e);
          expect(
            InvalidLockOptionsError.is(error),
            `${verb} ${JSON.stringify(transaction)}: ${String(error)}`,
          ).toBe(true);
        }
        expect(
          () => instance.advisoryLocks({ transaction: transaction as TransactionSettings }),
          JSON.stringify(transaction),
        ).toThrow(expect.objectContaining({ code: 'INVALID_LOCK_OPTIONS' }));
      }
      expect(ran).toBe(false);
      if (!noCount) expect(instance.statementCount()).toBe(before);
      expect(await ctx.backdoor.locksOn(key)).toEqual([]);
    });

    it('settings on a call that nests in a running transaction are refused', async () => {
      const instance = await ctx.open();
      const { name } = ctx.name('nested-settings');
      const inner = ctx.name('nested-settings-inner');
      const errors = await instance.locks.withLock(name, async (tx) => {
        const options = { transaction: { isolationLevel: 'serializable' } as const };
        return [
          await instance.withLock(inner.name, async () => 'ran', options).catch((e: unknown) => e),
          await instance
            .locksOn(tx)
            .withLock(inner.name, async () => 'ran', options)
            .catch((e: unknown) => e),
          // Without settings the nested call runs.
          await instance.withLock(inner.name, async () => 'ran'),
        ];
      });
      expect(InvalidLockOptionsError.is(errors[0]), String(errors[0])).toBe(true);
      expect((errors[0] as Error).message).toMatch(/nest/);
      expect(InvalidLockOptionsError.is(errors[1]), String(errors[1])).toBe(true);
      expect(errors[2]).toBe('ran');
    });
  });
}
