import { LockAbortedError, LockDeadlockError, LockNotAcquiredError } from '@pglock/core';
import { describe, expect, it } from 'vitest';
import {
  deferred,
  firstReason,
  holdLock,
  missing,
  outcome,
  type SuiteContext,
  settlesWithin,
  skipped,
  sleep,
} from '../context.ts';

/**
 * The in-process queue (issue 14 item 3, correctness side): callers of one instance that want the
 * same key line up in the process, in arrival order, and only the head waits on the server; the
 * budget and the signal cover the time in the queue; shared callers go through together.
 */
export function queueSuite(ctx: SuiteContext): void {
  const { capabilities } = ctx.harness;
  const noContention = firstReason(
    missing(capabilities, 'contention', 'one connection only: nothing can contend'),
    missing(capabilities, 'concurrentCalls', 'one client: the instance runs one transaction at a time'),
  );
  const noAbort = missing(capabilities, 'abort', 'the adapter cannot cancel a server-side wait');
  const noTerminate = missing(
    capabilities,
    'survivesTerminatedTransaction',
    'the driver neither settles nor survives a transaction whose backend is terminated (docs/reliability.md)',
  );

  describe.skipIf(noContention)(`in-process queue${skipped(noContention)}`, () => {
    it('20 concurrent withLock on one key: at most one server-side waiter at any time, callbacks in arrival order', async () => {
      const { name, key } = ctx.name('queue-20');
      const holder = await ctx.open();
      const instance = await ctx.open();
      const held = await holdLock(holder, name);
      const order: number[] = [];
      let done = false;
      let mostWaiting = 0;
      const watching = (async () => {
        while (!done) {
          mostWaiting = Math.max(mostWaiting, (await ctx.backdoor.waitersOn(key)).length);
        }
      })();
      const calls = Array.from({ length: 20 }, (_, i) =>
        instance.withLock(name, async () => {
          order.push(i);
          await sleep(2);
        }),
      );
      try {
        await ctx.backdoor.waitForWaiters(key, 1);
        await sleep(200);
        expect(mostWaiting, 'server-side waiters while the key was held').toBe(1);
      } finally {
        await held.release();
      }
      await settlesWithin(Promise.all(calls), 20_000, 'the 20 callers');
      done = true;
      await watching;
      expect(mostWaiting).toBe(1);
      expect(order).toEqual(Array.from({ length: 20 }, (_, i) => i));
    });

    it('timeoutMs covers the time in the queue: a queued caller gives up on time, the head is unaffected', async () => {
      const { name, key } = ctx.name('queue-timeout');
      const holder = await ctx.open();
      const instance = await ctx.open();
      const held = await holdLock(holder, name);
      const head = outcome(instance.withLock(name, async () => 'head'));
      await ctx.backdoor.waitForWaiters(key, 1);
      const started = performance.now();
      const error = await instance
        .withLock(name, async () => 'queued', { timeoutMs: 300 })
        .catch((e: unknown) => e);
      const elapsed = performance.now() - started;
      expect(LockNotAcquiredError.is(error), String(error)).toBe(true);
      expect(elapsed).toBeGreaterThanOrEqual(290);
      expect(elapsed).toBeLessThan(1_500);
      // A try does not queue at all.
      expect(await instance.tryWithLock(name, async () => 'tried')).toEqual({ acquired: false });
      expect(await ctx.backdoor.waitersOn(key)).toHaveLength(1);
      await held.release();
      expect(await settlesWithin(head, 5_000, 'the head')).toEqual({ ok: true, value: 'head' });
    });

    it.skipIf(noAbort)(
      `the signal covers the time in the queue; the callers behind keep their turn${skipped(noAbort)}`,
      async () => {
        const { name, key } = ctx.name('queue-abort');
        const holder = await ctx.open();
        const instance = await ctx.open();
        const held = await holdLock(holder, name);
        const order: string[] = [];
        const head = instance.withLock(name, async () => void order.push('head'));
        await ctx.backdoor.waitForWaiters(key, 1);
        const controller = new AbortController();
        const aborted = outcome(
          instance.withLock(name, async () => void order.push('aborted'), { signal: controller.signal }),
        );
        const behind = instance.withLock(name, async () => void order.push('behind'));
        await sleep(50);
        const abortedAt = performance.now();
        controller.abort();
        const result = await settlesWithin(aborted, 1_000, 'the queued, aborted caller');
        expect(performance.now() - abortedAt).toBeLessThan(100);
        expect(!result.ok && LockAbortedError.is(result.error)).toBe(true);
        await held.release();
        await Promise.all([head, behind]);
        expect(order).toEqual(['head', 'behind']);
      },
    );

    it('timeoutMs and the signal cover the wait for a pooled connection: a pool of 1 busy in a callback', async () => {
      const busy = ctx.name('pool-wait-busy');
      const other = ctx.name('pool-wait-other');
      const instance = await ctx.open({ max: 1 });
      const held = await holdLock(instance, busy.name);
      let ran = 0;
      const late = async () => {
        ran++;
        return 'ran after its caller was answered';
      };
      try {
        const started = performance.now();
        const timedOut = await instance
          .withLock(other.name, late, { timeoutMs: 300 })
          .catch((e: unknown) => e);
        const elapsed = performance.now() - started;
        expect(LockNotAcquiredError.is(timedOut), String(timedOut)).toBe(true);
        expect(elapsed).toBeGreaterThanOrEqual(290);
        expect(elapsed).toBeLessThan(1_500);
        if (noAbort === undefined) {
          const controller = new AbortController();
          setTimeout(() => controller.abort(), 200);
          const abortedAt = performance.now();
          const aborted = await instance
            .withLock(other.name, late, { signal: controller.signal })
            .catch((e: unknown) => e);
          expect(LockAbortedError.is(aborted), String(aborted)).toBe(true);
          expect((aborted as LockAbortedError).held).toBe(false);
          expect(performance.now() - abortedAt).toBeLessThan(1_200);
        }
      } finally {
        await held.release();
      }
      // The transactions opened too late rolled back at once: nothing holds the key, nothing ran, and
      // the one connection serves the next call.
      expect(await instance.withLock(other.name, async () => 'next')).toBe('next');
      expect(ran).toBe(0);
      expect(await ctx.backdoor.locksOn(other.key)).toEqual([]);
    });

    it('shared callers go through together, also after an exclusive holder lets go', async () => {
      const { name, key } = ctx.name('queue-shared');
      const holder = await ctx.open();
      const instance = await ctx.open();
      const all = (count: number) => {
        let inside = 0;
        const together = deferred();
        return () =>
          instance.withLock(
            name,
            async () => {
              if (++inside === count) together.resolve();
              await settlesWithin(together.promise, 5_000, `${count} shared callers inside at once`);
            },
            { shared: true },
          );
      };
      const free = all(3);
      await Promise.all([free(), free(), free()]);
      const held = await holdLock(holder, name);
      const behind = all(3);
      const calls = [behind(), behind(), behind()];
      await ctx.backdoor.waitForWaiters(key, 1);
      await held.release();
      await settlesWithin(Promise.all(calls), 10_000, 'the shared callers');
    });

    it('a shared caller does not overtake an exclusive one queued before it', async () => {
      const { name } = ctx.name('queue-no-overtake');
      const instance = await ctx.open();
      const order: string[] = [];
      const leave = deferred();
      const entered = deferred();
      const first = instance.withLock(
        name,
        async () => {
          order.push('shared 1');
          entered.resolve();
          await leave.promise;
        },
        { shared: true },
      );
      await entered.promise;
      const exclusive = instance.withLock(name, async () => void order.push('exclusive'));
      await sleep(20);
      const second = instance.withLock(name, async () => void order.push('shared 2'), { shared: true });
      await sleep(50);
      expect(order).toEqual(['shared 1']);
      leave.resolve();
      await Promise.all([first, exclusive, second]);
      expect(order).toEqual(['shared 1', 'exclusive', 'shared 2']);
    });

    it('multi-key callers in one instance, in both orders, never deadlock', async () => {
      const a = ctx.name('queue-multi-a').name;
      const b = ctx.name('queue-multi-b').name;
      const instance = await ctx.open();
      let sections = 0;
      const calls = Array.from({ length: 12 }, (_, i) =>
        instance.withLock(i % 2 === 0 ? [a, b] : [b, a], async () => {
          sections++;
          await sleep(1);
        }),
      );
      await settlesWithin(Promise.all(calls), 10_000, 'the multi-key callers');
      expect(sections).toBe(12);
    });

    it.skipIf(noAbort)(
      `a multi-key caller that gives up in the queue hands on the key it had taken there${skipped(noAbort)}`,
      async () => {
        // Canonical order is by key: the multi-key caller takes `first` in the queue, then waits for `second`.
        const [first, second] = [ctx.name('queue-multi-first'), ctx.name('queue-multi-second')].sort(
          (x, y) => (x.key < y.key ? -1 : 1),
        ) as [{ name: string; key: bigint }, { name: string; key: bigint }];
        const holder = await ctx.open();
        const instance = await ctx.open();
        const held = await holdLock(holder, second.name);
        try {
          const head = outcome(instance.withLock(second.name, async () => 'head'));
          await ctx.backdoor.waitForWaiters(second.key, 1);
          const controller = new AbortController();
          const multi = outcome(
            instance.withLock([first.name, second.name], async () => 'multi', { signal: controller.signal }),
          );
          const behind = instance.withLock(first.name, async () => 'behind');
          controller.abort();
          const left = await settlesWithin(multi, 1_000, 'the aborted multi-key caller');
          expect(!left.ok && LockAbortedError.is(left.error), String(!left.ok && left.error)).toBe(true);
          // `first` is free on the server: the caller behind runs while `second` is still held.
          expect(await settlesWithin(behind, 5_000, 'the caller behind on the first key')).toBe('behind');
          await held.release();
          expect(await settlesWithin(head, 5_000, 'the head')).toEqual({ ok: true, value: 'head' });
        } finally {
          await held.release();
        }
      },
    );

    it("the head's server wait runs out of budget, or its callback throws: the caller behind goes on", async () => {
      const { name, key } = ctx.name('queue-head-fails');
      const holder = await ctx.open();
      const instance = await ctx.open();
      const held = await holdLock(holder, name);
      try {
        const timedOut = outcome(instance.withLock(name, async () => 'timed out', { timeoutMs: 300 }));
        await ctx.backdoor.waitForWaiters(key, 1);
        const throws = outcome(
          instance.withLock(name, async () => {
            throw new Error('callback failed');
          }),
        );
        const last = outcome(instance.withLock(name, async () => 'last'));
        const first = await settlesWithin(timedOut, 5_000, 'the head with a budget');
        expect(!first.ok && LockNotAcquiredError.is(first.error), String(!first.ok && first.error)).toBe(
          true,
        );
        // The throwing caller is the head now, waiting on the server; the last one is queued behind it.
        await ctx.backdoor.waitForWaiters(key, 1);
        expect(await ctx.backdoor.waitersOn(key)).toHaveLength(1);
        await held.release();
        const second = await settlesWithin(throws, 5_000, 'the throwing caller');
        expect(!second.ok && (second.error as Error).message).toBe('callback failed');
        expect(await settlesWithin(last, 5_000, 'the last caller')).toEqual({ ok: true, value: 'last' });
        expect(await ctx.backdoor.locksOn(key)).toEqual([]);
      } finally {
        await held.release();
      }
    });

    it.skipIf(noTerminate)(
      `the head's backend is terminated during its server wait: it rejects, and the caller behind waits on the server in its place${skipped(noTerminate)}`,
      async () => {
        const { name, key } = ctx.name('queue-head-terminated');
        const holder = await ctx.open();
        const instance = await ctx.open();
        const held = await holdLock(holder, name);
        try {
          const head = outcome(instance.withLock(name, async () => 'head'));
          const [pid] = await ctx.backdoor.waitFor('the head on the server', async () => {
            const waiters = await ctx.backdoor.waitersOn(key);
            return waiters.length === 1 ? waiters : undefined;
          });
          const behind = outcome(instance.withLock(name, async () => 'behind'));
          await ctx.backdoor.terminate(pid as number);
          const next = await ctx.backdoor.waitFor('the caller behind on the server', async () => {
            const waiters = await ctx.backdoor.waitersOn(key);
            return waiters.length === 1 && waiters[0] !== pid ? waiters : undefined;
          });
          expect(next).toHaveLength(1);
          const ended = await settlesWithin(head, 5_000, 'the head whose backend was terminated');
          expect(ended.ok, 'the terminated head rejects').toBe(false);
          await held.release();
          expect(await settlesWithin(behind, 5_000, 'the caller behind')).toEqual({
            ok: true,
            value: 'behind',
          });
          expect(await ctx.backdoor.locksOn(key)).toEqual([]);
        } finally {
          await held.release();
        }
      },
    );

    it('one instance, two callbacks each holding a key and nesting a call for the other one, callers queued behind both: LockDeadlockError, never a hang', async () => {
      const x = ctx.name('queue-cross-x');
      const y = ctx.name('queue-cross-y');
      const instance = await ctx.open({ max: 6 });
      const inX = deferred();
      const inY = deferred();
      const crossed = [
        outcome(
          instance.withLock(x.name, async () => {
            inX.resolve();
            await inY.promise;
            return instance.withLock(y.name, async () => 'x then y');
          }),
        ),
        outcome(
          instance.withLock(y.name, async () => {
            inY.resolve();
            await inX.promise;
            return instance.withLock(x.name, async () => 'y then x');
          }),
        ),
      ];
      await Promise.all([inX.promise, inY.promise]);
      const queued = [x.name, y.name, x.name, y.name].map((name) =>
        outcome(instance.withLock(name, async () => 'queued')),
      );
      const results = await settlesWithin(Promise.all([...crossed, ...queued]), 15_000, 'every caller');
      const deadlocks = results.filter((r) => !r.ok && LockDeadlockError.is(r.error));
      expect(
        deadlocks.length,
        JSON.stringify(results.map((r) => (r.ok ? r.value : String(r.error)))),
      ).toBeGreaterThanOrEqual(1);
      // Whatever PostgreSQL chose as victims, everyone else got the lock and nothing is left held.
      for (const r of results)
        expect(r.ok || LockDeadlockError.is(r.error), String(!r.ok && r.error)).toBe(true);
      expect(await ctx.backdoor.locksOn(x.key)).toEqual([]);
      expect(await ctx.backdoor.locksOn(y.key)).toEqual([]);
    });

    it.skipIf(noAbort)(
      `1000 callers queued with one signal, then aborted: all reject at once, no listener warning, the key is free${skipped(noAbort)}`,
      async () => {
        const { name, key } = ctx.name('queue-1000');
        const holder = await ctx.open();
        const instance = await ctx.open();
        const warnings: Error[] = [];
        const onWarning = (warning: Error): void => void warnings.push(warning);
        process.on('warning', onWarning);
        const held = await holdLock(holder, name);
        try {
          const head = outcome(instance.withLock(name, async () => 'head', { timeoutMs: 10_000 }));
          await ctx.backdoor.waitForWaiters(key, 1);
          const controller = new AbortController();
          let ran = 0;
          const queued = Array.from({ length: 1_000 }, () =>
            outcome(
              instance.withLock(name, async () => void ran++, {
                signal: controller.signal,
                timeoutMs: 60_000,
              }),
            ),
          );
          const abortedAt = performance.now();
          controller.abort();
          const results = await settlesWithin(Promise.all(queued), 2_000, 'the 1000 aborted callers');
          expect(performance.now() - abortedAt).toBeLessThan(1_000);
          expect(results.filter((r) => !r.ok && LockAbortedError.is(r.error))).toHaveLength(1_000);
          expect(ran).toBe(0);
          expect(await ctx.backdoor.waitersOn(key)).toHaveLength(1);
          await held.release();
          expect(await settlesWithin(head, 5_000, 'the head')).toEqual({ ok: true, value: 'head' });
          const started = performance.now();
          expect(await instance.withLock(name, async () => 'after', { timeoutMs: 1_000 })).toBe('after');
          expect(performance.now() - started).toBeLessThan(500);
          expect(warnings.map(String)).toEqual([]);
        } finally {
          process.off('warning', onWarning);
          await held.release();
        }
      },
    );
  });
}
