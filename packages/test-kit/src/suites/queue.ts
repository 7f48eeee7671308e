import { LockAbortedError, LockNotAcquiredError } from '@pglock/core';
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
  });
}
