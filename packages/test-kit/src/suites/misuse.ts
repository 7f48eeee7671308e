import {
  InvalidLockKeyError,
  InvalidLockOptionsError,
  LockAbortedError,
  LockNotAcquiredError,
  LockUsageError,
  lockKey,
} from '@pglock/core';
import { describe, expect, it } from 'vitest';
import {
  firstReason,
  holdLock,
  missing,
  outcome,
  type SuiteContext,
  settlesWithin,
  skipped,
} from '../context.ts';
import type { AdapterInstance } from '../harness.ts';

// A lone UTF-16 surrogate: half an emoji.
const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Every verb of an instance called with `target` and `options` as given (bad input on purpose). */
function everyVerb(
  instance: AdapterInstance,
  target: unknown,
  options: unknown,
): [string, () => Promise<unknown>][] {
  const t = target as never;
  const o = options as never;
  const calls: [string, () => Promise<unknown>][] = [
    ['withLock', () => instance.withLock(t, async () => 'ran', o)],
    ['tryWithLock', () => instance.tryWithLock(t, async () => 'ran', o)],
    ['lock', () => instance.transaction((tx) => tx.lock(t, o))],
    ['tryLock', () => instance.transaction((tx) => tx.tryLock(t, o))],
  ];
  if (instance.locks.acquireSessionLock !== undefined && instance.locks.withSessionLock !== undefined) {
    const { acquireSessionLock, tryAcquireSessionLock, withSessionLock } = instance.locks;
    calls.push(
      ['acquireSessionLock', () => acquireSessionLock(t, o)],
      ['tryAcquireSessionLock', () => (tryAcquireSessionLock as typeof acquireSessionLock)(t, o)],
      ['withSessionLock', () => withSessionLock(t, async () => 'ran', o)],
    );
  }
  return calls;
}

/**
 * Misuse (issue 12 A4, D13): a lock call outside a transaction is refused, never "locked" for a
 * moment; bad input is a typed error before any SQL with nothing leaked; keys are read once; messages
 * stay well-formed; a shared signal stays within Node's listener limit.
 */
export function misuseSuite(ctx: SuiteContext): void {
  const { capabilities } = ctx.harness;
  const noCount = missing(capabilities, 'countsStatements', 'the adapter cannot count statements');
  const noContention = missing(capabilities, 'contention', 'one connection only: nothing can contend');
  const noAbort = missing(capabilities, 'abort', 'the adapter cannot cancel a server-side wait');
  const noBackdoor = missing(
    capabilities,
    'contention',
    'an in-process database of its own: the backdoor cannot see its tables and locks',
  );

  describe('misuse', () => {
    it('A4: lock/tryLock on a handle that is not a transaction is LockUsageError, and nothing is locked', async (test) => {
      const instance = await ctx.open();
      if (instance.db === undefined) {
        test.skip('the harness does not expose its database handle (HarnessSetup.db)');
        return;
      }
      const { name, key } = ctx.name('not-a-transaction');
      for (const [label, run] of [
        ['lock', () => instance.locks.lock(instance.db as never, name)],
        ['tryLock', () => instance.locks.tryLock(instance.db as never, name)],
        [
          'tryLock with timeoutMs',
          () => instance.locks.tryLock(instance.db as never, name, { timeoutMs: 100 }),
        ],
      ] as const) {
        const result = await outcome(run() as Promise<unknown>);
        expect(result.ok, `${label} resolved as if locked`).toBe(false);
        expect(LockUsageError.is((result as { error: unknown }).error), label).toBe(true);
        expect((result as { error: Error }).error.message).toMatch(/transaction/);
        expect(await ctx.backdoor.locksOn(key)).toEqual([]);
      }
    });

    it.each([
      // biome-ignore lint/suspicious/noSparseArray: the hole is the input under test
      ['[, "a"]', () => [, 'a']],
      ['new Array(1)', () => new Array(1)],
      // biome-ignore lint/suspicious/noSparseArray: the hole is the input under test
      ['["a", , "b"]', () => ['a', , 'b']],
    ])(
      'D13: a sparse key array %s is InvalidLockKeyError on every verb before any SQL, and nothing leaks',
      async (_label, make) => {
        const instance = await ctx.open({ max: 1 });
        for (const [verb, run] of everyVerb(instance, make(), undefined)) {
          // lock/tryLock open the harness's transaction first: count from inside it.
          const before = instance.statementCount();
          const error = await settlesWithin(
            run().catch((e: unknown) => e),
            5_000,
            verb,
          );
          expect(InvalidLockKeyError.is(error), `${verb}: ${String(error)}`).toBe(true);
          expect((error as Error).message).toMatch(/index \d+ is missing/);
          if (capabilities.countsStatements && verb !== 'lock' && verb !== 'tryLock') {
            expect(instance.statementCount(), verb).toBe(before);
          }
        }
        // A leaked pooled connection would keep the pool (of one) from ever closing.
        await settlesWithin(instance.close(), 5_000, 'close() after the refused calls');
      },
    );

    it('D13: options: null is InvalidLockOptionsError on every verb before any SQL; defaults: null too', async () => {
      const instance = await ctx.open();
      const { name, key } = ctx.name('null-options');
      for (const [verb, run] of everyVerb(instance, name, null)) {
        const error = await run().catch((e: unknown) => e);
        expect(InvalidLockOptionsError.is(error), `${verb}: ${String(error)}`).toBe(true);
      }
      expect(() => instance.advisoryLocks(null as never)).toThrow(
        expect.objectContaining({ code: 'INVALID_LOCK_OPTIONS' }),
      );
      expect(await ctx.backdoor.locksOn(key)).toEqual([]);
    });

    it.skipIf(noCount)(`D13: options: null sends no SQL${skipped(noCount)}`, async () => {
      const instance = await ctx.open();
      await instance.withLock(ctx.name('warm').name, async () => undefined);
      const before = instance.statementCount();
      const { name } = ctx.name('null-options-count');
      for (const [verb, run] of everyVerb(instance, name, null)) {
        if (verb === 'lock' || verb === 'tryLock') continue;
        await run().catch(() => undefined);
      }
      expect(instance.statementCount()).toBe(before);
    });

    it.skipIf(noBackdoor)(
      `D13: a pair key is read once: the pair and its members are validated and sent as first read${skipped(noBackdoor)}`,
      async () => {
        const instance = await ctx.open();
        const a = Math.floor(Math.random() * 2 ** 30);
        const b = Math.floor(Math.random() * 2 ** 30);
        let pairReads = 0;
        let memberReads = 0;
        const members: number[] = [];
        for (const [index, first] of [
          [0, a],
          [1, b],
        ] as const) {
          Object.defineProperty(members, index, {
            get: () => (memberReads++ < 2 ? first : 2 ** 40),
            enumerable: true,
          });
        }
        const key = {
          get pair() {
            pairReads++;
            return pairReads === 1 ? members : [2 ** 40, 2 ** 40];
          },
        };
        const held = await instance.withLock(key as never, async () =>
          ctx.backdoor.locksOn(lockKey({ pair: [a, b] })),
        );
        expect(held).toHaveLength(1);
        expect({ pairReads, memberReads }).toEqual({ pairReads: 1, memberReads: 2 });
        // The same inside a transaction of the caller's.
        pairReads = 0;
        memberReads = 0;
        const inTx = await instance.transaction(async (tx) => {
          await tx.lock(key as never);
          return ctx.backdoor.locksOn(lockKey({ pair: [a, b] }));
        });
        expect(inTx).toHaveLength(1);
        expect({ pairReads, memberReads }).toEqual({ pairReads: 1, memberReads: 2 });
      },
    );

    it.skipIf(noContention)(
      `D13: a long emoji name is cut on a code point in error messages${skipped(noContention)}`,
      async () => {
        const { name: unique } = ctx.name('emoji');
        const name = `${'🔒'.repeat(40)}${unique}`;
        const [holder, contender] = [await ctx.open(), await ctx.open()];
        const held = await holdLock(holder, name);
        try {
          const error = await contender
            .withLock(name, async () => 'ran', { timeoutMs: 0 })
            .catch((e: unknown) => e);
          expect(LockNotAcquiredError.is(error)).toBe(true);
          const { message } = error as Error;
          expect(message).toMatch(/\.\.\./);
          expect(message).not.toMatch(loneSurrogate);
          expect(JSON.stringify(message)).not.toMatch(/\\ud[89ab]/i);
        } finally {
          await held.release();
        }
      },
    );

    const noSharedSignal = firstReason(
      noContention,
      noAbort,
      missing(capabilities, 'concurrentCalls', 'one client: the instance runs one transaction at a time'),
    );
    it.skipIf(noSharedSignal)(
      `D13: one AbortSignal shared by 15 concurrent waits raises no MaxListenersExceededWarning${skipped(noSharedSignal)}`,
      async () => {
        const hot = ctx.name('shared-signal-hot');
        const cold = Array.from({ length: 7 }, (_, i) => ctx.name(`shared-signal-${i}`));
        const holder = await ctx.open();
        const instance = await ctx.open({ max: 16 });
        const warnings: Error[] = [];
        const onWarning = (warning: Error): void => {
          warnings.push(warning);
        };
        process.on('warning', onWarning);
        try {
          const held = await holdLock(holder, [hot.name, ...cold.map((c) => c.name)]);
          const controller = new AbortController();
          const { signal } = controller;
          // 8 waits on one key (one server wait, 7 queued in process) and 7 server waits on others.
          const waits = [
            ...Array.from({ length: 8 }, () =>
              outcome(instance.withLock(hot.name, async () => 'ran', { signal })),
            ),
            ...cold.map((c) => outcome(instance.withLock(c.name, async () => 'ran', { signal }))),
          ];
          for (const c of cold) await ctx.backdoor.waitForWaiters(c.key, 1);
          await ctx.backdoor.waitForWaiters(hot.key, 1);
          controller.abort(new Error('shutdown'));
          const results = await settlesWithin(Promise.all(waits), 5_000, 'the aborted waits');
          await new Promise((resolve) => setImmediate(resolve));
          expect(results.every((r) => !r.ok && LockAbortedError.is(r.error))).toBe(true);
          await held.release();
        } finally {
          process.off('warning', onWarning);
        }
        expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map(String)).toEqual([]);
      },
    );
  });
}
