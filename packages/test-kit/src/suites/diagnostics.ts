import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { lockChannels } from '@pglock/core';
import { describe, expect, it } from 'vitest';
import { firstReason, holdLock, missing, type SuiteContext, skipped, sleep } from '../context.ts';

type Recorded = { channel: string; event: Record<string, unknown> };

/** Records every pglock event for keys named with `prefix` while `run` runs. */
async function record(prefix: string, run: () => Promise<void>): Promise<Recorded[]> {
  const seen: Recorded[] = [];
  const listeners = Object.values(lockChannels).map((channel) => {
    const listener = (message: unknown) => {
      const event = message as Record<string, unknown> & { names: (string | undefined)[] };
      if (event.names.some((name) => name?.startsWith(prefix))) seen.push({ channel, event });
    };
    subscribe(channel, listener);
    return [channel, listener] as const;
  });
  try {
    await run();
  } finally {
    for (const [channel, listener] of listeners) unsubscribe(channel, listener);
  }
  return seen;
}

/** `node:diagnostics_channel` events (issue 13 item 5): the same for every adapter, published by core. */
export function diagnosticsSuite(ctx: SuiteContext): void {
  const { capabilities } = ctx.harness;
  const noContention = missing(capabilities, 'contention', 'one connection only: nothing can contend');
  const noSession = firstReason(
    missing(capabilities, 'session', 'the adapter offers no session locks'),
    ctx.viaPooler ? 'session locks are refused through a transaction-mode pooler' : undefined,
  );

  describe('diagnostics_channel events', () => {
    it('withLock publishes requested → acquired → released with one id, scope, mode and timings', async () => {
      const { name, key } = ctx.name('diag');
      const instance = await ctx.open();
      const events = await record(name, async () => {
        await instance.withLock(name, () => sleep(20), { shared: true });
      });
      expect(events.map((e) => e.channel)).toEqual([
        lockChannels.requested,
        lockChannels.acquired,
        lockChannels.released,
      ]);
      expect(new Set(events.map((e) => e.event.id)).size).toBe(1);
      expect(events[0]?.event).toMatchObject({ names: [name], scope: 'transaction', mode: 'shared' });
      expect(events[0]?.event.keys).toMatchObject([{ form: 'bigint', value: key }]);
      expect(events[1]?.event.waitMs).toBeTypeOf('number');
      expect(events[2]?.event.heldMs as number).toBeGreaterThanOrEqual(15);
    });

    it.skipIf(noContention)(
      `a busy try publishes not-acquired with reason "busy", a timeout "timeout"; neither publishes released${skipped(noContention)}`,
      async () => {
        const { name } = ctx.name('diag-busy');
        const [holder, instance] = [await ctx.open(), await ctx.open()];
        const held = await holdLock(holder, name);
        let events: Recorded[];
        try {
          events = await record(name, async () => {
            expect(await instance.tryWithLock(name, async () => 'x')).toEqual({ acquired: false });
            await instance.withLock(name, async () => 'x', { timeoutMs: 50 }).catch(() => undefined);
          });
        } finally {
          await held.release();
        }
        const ended = events.filter((e) => e.channel === lockChannels.notAcquired).map((e) => e.event.reason);
        expect(ended).toEqual(['busy', 'timeout']);
        expect(events.some((e) => e.channel === lockChannels.released)).toBe(false);
      },
    );

    it.skipIf(noContention)(
      `a call whose budget runs out in the in-process queue, before any statement, still publishes requested and not-acquired "timeout"${skipped(noContention)}`,
      async () => {
        const { name } = ctx.name('diag-queued');
        const [holder, instance] = [await ctx.open(), await ctx.open()];
        const held = await holdLock(holder, name);
        let events: Recorded[];
        try {
          events = await record(name, async () => {
            // The first waits on the server; the second queues behind it in this process and runs
            // out of budget there (it never sends a lock statement).
            const first = instance
              .withLock(name, async () => 'x', { timeoutMs: 1_500 })
              .catch(() => undefined);
            const second = instance
              .withLock(name, async () => 'x', { timeoutMs: 100 })
              .catch(() => undefined);
            await Promise.all([first, second]);
          });
        } finally {
          await held.release();
        }
        const requested = events.filter((e) => e.channel === lockChannels.requested);
        const ended = events.filter((e) => e.channel === lockChannels.notAcquired).map((e) => e.event.reason);
        expect(requested).toHaveLength(2);
        expect(ended).toEqual(['timeout', 'timeout']);
        expect(events.some((e) => e.channel === lockChannels.acquired)).toBe(false);
      },
    );

    it.skipIf(noSession)(
      `a session lock publishes released on release, and lost when its backend is terminated${skipped(noSession)}`,
      async () => {
        const { name } = ctx.name('diag-session');
        const instance = await ctx.open();
        const events = await record(name, async () => {
          const first = await instance.acquireSessionLock(name);
          await first.release();
          const second = await instance.acquireSessionLock(name, { heartbeatMs: 200 });
          const lost = new Promise((resolve) =>
            second.signal.addEventListener('abort', resolve, { once: true }),
          );
          await ctx.backdoor.query('SELECT pg_terminate_backend($1::int)', [second.pid]);
          await lost;
        });
        expect(events.map((e) => `${e.event.scope}:${e.channel}`)).toEqual([
          `session:${lockChannels.requested}`,
          `session:${lockChannels.acquired}`,
          `session:${lockChannels.released}`,
          `session:${lockChannels.requested}`,
          `session:${lockChannels.acquired}`,
          `session:${lockChannels.lost}`,
        ]);
        expect(events.at(-1)?.event.error).toMatchObject({ code: 'LOCK_LOST' });
      },
    );

    it.skipIf(noSession)(
      `a busy session try publishes not-acquired "busy"${skipped(noSession)}`,
      async () => {
        const { name } = ctx.name('diag-session-busy');
        const [holder, instance] = [await ctx.open(), await ctx.open()];
        const handle = await holder.acquireSessionLock(name);
        try {
          const events = await record(name, async () => {
            expect(await instance.tryAcquireSessionLock(name)).toBeUndefined();
          });
          expect(events.map((e) => [e.channel, e.event.scope, e.event.reason])).toEqual([
            [lockChannels.requested, 'session', undefined],
            [lockChannels.notAcquired, 'session', 'busy'],
          ]);
        } finally {
          await handle.release();
        }
      },
    );
  });
}
