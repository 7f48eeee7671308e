import { LockAbortedError } from '@pglock/core';
import { describe, expect, it } from 'vitest';
import {
  firstReason,
  holdLock,
  missing,
  outcome,
  pidOf,
  type SuiteContext,
  settlesWithin,
  skipped,
  sleep,
} from '../context.ts';
import type { AdapterInstance } from '../harness.ts';

/**
 * The bound for "an aborted call rejects within 100 ms" (issue 12 C8), with slack for a loaded
 * machine (a cancel is a new connection, its start-up is CPU: 500 ms was seen at load 15 on 2 cores);
 * a cancel that needs a pooled connection hangs until the holder lets go (the 5 s `settlesWithin`).
 */
const ABORT_BOUND_MS = 1_500;

/** Holds `names` in another instance, starts one `withLock` per entry of `waits`, aborts them all. */
async function abortUnderExhaustion(
  ctx: SuiteContext,
  instance: AdapterInstance,
  heldNames: string[],
  waits: { name: string; key: bigint }[],
  serverWaits: number,
): Promise<void> {
  const holder = await ctx.open();
  const held = await holdLock(holder, heldNames);
  const controller = new AbortController();
  const settledAt: number[] = [];
  let ran = 0;
  const results = waits.map((w) =>
    outcome(
      instance
        .withLock(
          w.name,
          async () => {
            ran++;
          },
          { signal: controller.signal },
        )
        .finally(() => settledAt.push(performance.now())),
    ),
  );
  try {
    // Every pooled connection waits on the server; the other callers queue for a turn or a connection.
    const keys = [...new Set(waits.map((w) => w.key))];
    await ctx.backdoor.waitFor(`${serverWaits} server-side waiters`, async () => {
      let waiting = 0;
      for (const key of keys) waiting += (await ctx.backdoor.waitersOn(key)).length;
      return waiting >= serverWaits || undefined;
    });
    await sleep(100);
    const abortedAt = performance.now();
    controller.abort(new Error('shutting down'));
    const settled = await settlesWithin(Promise.all(results), 5_000, 'the aborted waiters');
    const slowest = Math.max(...settledAt) - abortedAt;
    expect(settled.map((r) => !r.ok && LockAbortedError.is(r.error))).toEqual(waits.map(() => true));
    expect(slowest, `the slowest waiter settled ${slowest.toFixed(0)} ms after the abort`).toBeLessThan(
      ABORT_BOUND_MS,
    );
    // Their transactions were rolled back: nobody waits, nothing of theirs is idle in a transaction.
    for (const key of new Set(waits.map((w) => w.key))) {
      expect(await ctx.backdoor.locksOn(key)).toEqual([
        { pid: held.pid, granted: true, mode: 'ExclusiveLock' },
      ]);
    }
  } finally {
    await held.release();
  }
  // Once the holder lets go, no forgotten waiter grabs the lock and sits on it.
  await sleep(200);
  for (const key of new Set(waits.map((w) => w.key))) expect(await ctx.backdoor.locksOn(key)).toEqual([]);
  expect(ran).toBe(0);
  // The pool got every connection back.
  expect(
    await settlesWithin(
      instance.tryWithLock(waits[0]?.name ?? '', async () => 'ok'),
      5_000,
      'withLock',
    ),
  ).toEqual({
    acquired: true,
    value: 'ok',
  });
}

/**
 * Aborts (issue 12 C8, D11): `signal` ends a wait even when every pooled connection is waiting,
 * and an abort that lands as the lock is granted is reported as it is.
 */
export function abortSuite(ctx: SuiteContext): void {
  const { capabilities } = ctx.harness;
  const noContention = missing(capabilities, 'contention', 'one connection only: nothing can contend');
  const noAbort = missing(capabilities, 'abort', 'the adapter cannot cancel a server-side wait');
  const reason = firstReason(noContention, noAbort);
  const noPool = firstReason(
    reason,
    missing(capabilities, 'concurrentCalls', 'one client: the instance runs one transaction at a time'),
  );

  describe.skipIf(noPool)(`abort under pool exhaustion${skipped(noPool)}`, () => {
    it(`C8: waiters for one key fill a pool of 2; abort rejects every one within ${ABORT_BOUND_MS} ms and rolls back`, async () => {
      const hot = ctx.name('exhausted-one-key');
      const instance = await ctx.open({ max: 2 });
      await abortUnderExhaustion(ctx, instance, [hot.name], [hot, hot, hot, hot], 1);
    });

    it(`C8: waiters for different keys (no in-process queue) fill a pool of 2; abort rejects every one within ${ABORT_BOUND_MS} ms`, async () => {
      const keys = [0, 1, 2, 3].map((i) => ctx.name(`exhausted-${i}`));
      const instance = await ctx.open({ max: 2 });
      await abortUnderExhaustion(
        ctx,
        instance,
        keys.map((k) => k.name),
        keys,
        2,
      );
    });
  });

  describe.skipIf(reason)(`abort as the lock is granted${skipped(reason)}`, () => {
    /**
     * Runs `tx.lock(name, { signal })` in the caller's transaction while the backdoor holds the key,
     * then lets go of it and aborts at `abortAt`; reports what the call said and what pg_locks showed.
     */
    async function race(
      instance: AdapterInstance,
      abortAt: 'before unlock' | 'with unlock' | 'after grant',
    ): Promise<{ resolved: boolean; errorHeld: boolean | undefined; held: boolean; error: unknown }> {
      const { name, key } = ctx.name('abort-granted');
      await ctx.backdoor.query('SELECT pg_advisory_lock($1::bigint)', [String(key)]);
      const controller = new AbortController();
      const marker = new Error('roll back');
      let seen:
        | { resolved: boolean; errorHeld: boolean | undefined; held: boolean; error: unknown }
        | undefined;
      try {
        await instance
          .transaction(async (tx) => {
            const pid = await pidOf(tx.sql);
            const locking = outcome(tx.lock(name, { signal: controller.signal }));
            await ctx.backdoor.waitForWaiters(key, 1);
            if (abortAt === 'before unlock') controller.abort();
            const unlocked = ctx.backdoor.query('SELECT pg_advisory_unlock($1::bigint)', [String(key)]);
            if (abortAt === 'with unlock') controller.abort();
            await unlocked;
            if (abortAt === 'after grant') {
              // The server granted the lock when the unlock returned; keep the event loop from
              // reading the grant before the abort (a busy wait), so the abort lands first here.
              const until = performance.now() + 20;
              while (performance.now() < until) {}
              controller.abort();
            }
            const result = await settlesWithin(locking, 5_000, 'lock()');
            const held = (await ctx.backdoor.locksOn(key)).some((l) => l.pid === pid && l.granted);
            seen = {
              resolved: result.ok,
              errorHeld: result.ok ? undefined : (result.error as LockAbortedError).held,
              held,
              error: result.ok ? undefined : result.error,
            };
            throw marker;
          })
          .catch((e: unknown) => {
            if (e !== marker) throw e;
          });
      } finally {
        await ctx.backdoor.query('SELECT pg_advisory_unlock_all()');
      }
      expect(await ctx.backdoor.locksOn(key)).toEqual([]);
      if (seen === undefined) throw new Error('the race did not run');
      return seen;
    }

    const truthful = (seen: Awaited<ReturnType<typeof race>>) => {
      if (seen.resolved) {
        expect(seen.held, 'lock() resolved but pg_locks shows nothing held').toBe(true);
      } else {
        expect(LockAbortedError.is(seen.error), String(seen.error)).toBe(true);
        expect(
          seen.errorHeld,
          `LockAbortedError.held is ${seen.errorHeld}, pg_locks says held: ${seen.held}`,
        ).toBe(seen.held);
      }
    };

    it('D11: an abort landing after the grant, before the reply is read: LockAbortedError with held === true, and the lock is held', async () => {
      const instance = await ctx.open();
      const outcomes: string[] = [];
      // Until the abort has landed on the granted lock once (every round's answer checked): on a
      // loaded machine the grant's reply is often read in the same tick as the unlock's, before
      // the abort (CI saw 5 of 5 rounds resolve), so five rounds were a chance, forty are not.
      for (let round = 0; round < 40 && !outcomes.includes('aborted(held: true)'); round++) {
        const seen = await race(instance, 'after grant');
        truthful(seen);
        outcomes.push(seen.resolved ? 'resolved' : `aborted(held: ${seen.errorHeld})`);
      }
      // At least once the abort must have landed on the granted lock (the case that used to lie).
      expect(outcomes, outcomes.join(', ')).toContain('aborted(held: true)');
    });

    it('D11: aborts racing the grant are reported truthfully in every round', async () => {
      const instance = await ctx.open();
      const tally = new Map<string, number>();
      for (let round = 0; round < 12; round++) {
        const seen = await race(instance, round % 2 === 0 ? 'with unlock' : 'before unlock');
        truthful(seen);
        const label = seen.resolved ? 'resolved' : `aborted(held: ${seen.errorHeld})`;
        tally.set(label, (tally.get(label) ?? 0) + 1);
      }
      console.info(
        `[${ctx.harness.name}] abort/grant races: ${[...tally].map(([k, n]) => `${k} ×${n}`).join(', ')}`,
      );
    });
  });
}
