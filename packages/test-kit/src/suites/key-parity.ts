import { type LockKeyInput, lockKey } from '@pglock/core';
import { describe, expect, it } from 'vitest';
import { firstReason, holdLock, missing, type SuiteContext, skipped } from '../context.ts';

/**
 * Key parity (issue 13 item 4): the same name and namespace lock the same `pg_locks` key whatever
 * the verb, and the key is `lockKey(…)` of `@pglock/core`, so every adapter agrees with every other.
 */
export function keyParitySuite(ctx: SuiteContext): void {
  const { capabilities } = ctx.harness;
  const noContention = missing(
    capabilities,
    'contention',
    'one connection only: no second session to look from',
  );
  const noSession = firstReason(
    missing(capabilities, 'session', 'the adapter offers no session locks'),
    ctx.viaPooler ? 'session locks are refused through a transaction-mode pooler' : undefined,
  );

  describe.skipIf(noContention)(`key parity${skipped(noContention)}`, () => {
    const inputs = (): [string, LockKeyInput, { namespace?: string }][] => {
      const namespace = `parity-${Math.random().toString(36).slice(2, 10)}`;
      return [
        ['a name', ctx.name('parity').name, {}],
        ['a name in a namespace', ctx.name('parity-ns').name, { namespace }],
        [
          'a bigint (a namespace is ignored)',
          BigInt.asIntN(64, ctx.name('parity-bigint').key),
          { namespace },
        ],
        ['a pair', { pair: [Math.floor(Math.random() * 2 ** 31), -7] }, {}],
      ];
    };

    it('withLock, lock(tx), isLocked and inspectLocks agree on the key of each input', async () => {
      const instance = await ctx.open();
      const observer = await ctx.open();
      for (const [label, input, options] of inputs()) {
        const expected = lockKey(input, options);
        // The factory's default namespace and a per-call one give the same key.
        const byDefault = observer.advisoryLocks(options);
        const held = await holdLock(instance, input, options);
        try {
          expect(await ctx.backdoor.locksOn(expected), label).toEqual([
            { pid: held.pid, granted: true, mode: 'ExclusiveLock' },
          ]);
          expect(await observer.isLocked(input, options), label).toBe(true);
          expect(await observer.advisoryLocks(options).isLocked(input), label).toBe(true);
          expect(await byDefault.tryWithLock(input, async () => 'ran'), label).toEqual({ acquired: false });
          const listed = (await observer.inspectLocks()).filter((l) => l.pid === held.pid);
          expect(
            listed.map((l) => l.key),
            label,
          ).toContainEqual(expected.form === 'pair' ? expected : { form: 'bigint', value: expected.value });
        } finally {
          await held.release();
        }
        const inTx = await observer.transaction(async (tx) => {
          await tx.lock(input, options);
          return ctx.backdoor.locksOn(expected);
        });
        expect(inTx, label).toHaveLength(1);
      }
    });

    it.skipIf(noSession)(`session locks take the same key as withLock${skipped(noSession)}`, async () => {
      const instance = await ctx.open();
      const other = await ctx.open();
      for (const [label, input, options] of inputs()) {
        const expected = lockKey(input, options);
        const handle = await instance.acquireSessionLock(input, options);
        try {
          expect(handle.key, label).toEqual(expected);
          expect(await ctx.backdoor.locksOn(expected), label).toEqual([
            { pid: handle.pid, granted: true, mode: 'ExclusiveLock' },
          ]);
          expect(await other.tryWithLock(input, async () => 'ran', options), label).toEqual({
            acquired: false,
          });
          expect(await other.advisoryLocks(options).tryWithLock(input, async () => 'ran'), label).toEqual({
            acquired: false,
          });
          expect(await other.isLocked(input, options), label).toBe(true);
        } finally {
          await handle.release();
        }
      }
    });
  });
}
