import { useLockTestFixtures } from '@pglock/test-kit';
import { describe, expect, it } from 'vitest';
import {
  acquireSessionLock,
  LockAbortedError,
  LockLostError,
  LockNotAcquiredError,
  tryAcquireSessionLock,
  withSessionLock,
} from '../src/index.ts';

const fixtures = useLockTestFixtures('session');
const { unique } = fixtures;
const newPool = (max = 2) => fixtures.newPool({ max });

describe('session locks (@pglock/pg)', () => {
  it('holds the lock on a dedicated connection until release, then returns the connection', async () => {
    const { name, key } = unique('basic');
    const pool = newPool();
    const handle = await acquireSessionLock(pool, name);
    expect(await fixtures.backdoor.locksOn(key)).toEqual([
      { pid: handle.pid, granted: true, mode: 'ExclusiveLock' },
    ]);
    expect(pool.idleCount).toBe(0);
    await handle.release();
    expect(await fixtures.backdoor.locksOn(key)).toEqual([]);
    expect(pool.idleCount).toBe(1);
    await handle.release(); // a second release is a no-op
    expect(handle.signal.aborted).toBe(false);
  });

  it('`await using` releases at the end of the block', async () => {
    const { name, key } = unique('using');
    const pool = newPool();
    {
      await using handle = await acquireSessionLock(pool, name);
      expect(await fixtures.backdoor.locksOn(key)).toHaveLength(1);
      expect(handle.key).toMatchObject({ name });
    }
    expect(await fixtures.backdoor.locksOn(key)).toEqual([]);
  });

  it('a second process-like pool cannot take it; try resolves undefined, a bounded wait times out', async () => {
    const { name, key } = unique('contention');
    const holder = await acquireSessionLock(newPool(), name);
    const other = newPool(1);
    expect(await tryAcquireSessionLock(other, name)).toBeUndefined();
    const error = await acquireSessionLock(other, name, { timeoutMs: 200 }).catch((e: unknown) => e);
    expect(LockNotAcquiredError.is(error)).toBe(true);
    // The timeout did not leak onto the pooled connection.
    const { rows } = await other.query('SELECT current_setting($1) AS v, pg_backend_pid() AS pid', [
      'lock_timeout',
    ]);
    const [baseline] = await fixtures.backdoor.query('SHOW lock_timeout');
    expect(rows[0].v).toBe(baseline?.lock_timeout);
    expect(rows[0].pid).not.toBe(holder.pid);
    expect(await fixtures.backdoor.locksOn(key)).toEqual([
      { pid: holder.pid, granted: true, mode: 'ExclusiveLock' },
    ]);
    await holder.release();
  });

  it('a multi-key try that fails part-way leaves nothing held', async () => {
    const first = unique('multi-1');
    const second = unique('multi-2');
    const holder = await acquireSessionLock(newPool(), second.name);
    expect(await tryAcquireSessionLock(newPool(), [first.name, second.name])).toBeUndefined();
    expect(await fixtures.backdoor.locksOn(first.key)).toEqual([]);
    await holder.release();
    const both = await acquireSessionLock(newPool(), [first.name, second.name]);
    expect(
      (await fixtures.backdoor.locksOn(first.key)).length +
        (await fixtures.backdoor.locksOn(second.key)).length,
    ).toBe(2);
    await both.release();
  });

  it('signal aborts with LockLostError when the backend is terminated, within the heartbeat bound', async () => {
    const { name, key } = unique('lost');
    const handle = await acquireSessionLock(newPool(), name, { heartbeatMs: 500 });
    const lost = new Promise<number>((resolve) =>
      handle.signal.addEventListener('abort', () => resolve(performance.now()), { once: true }),
    );
    const terminatedAt = performance.now();
    await fixtures.backdoor.query('SELECT pg_terminate_backend($1)', [handle.pid]);
    const detectedAt = await lost;
    expect(detectedAt - terminatedAt).toBeLessThan(1_500);
    expect(LockLostError.is(handle.signal.reason)).toBe(true);
    expect(LockLostError.is(await handle.release().catch((e: unknown) => e))).toBe(true);
    await fixtures.backdoor.waitFor(
      'the lock to be gone',
      async () => (await fixtures.backdoor.locksOn(key)).length === 0,
    );
  });

  it('an AbortSignal cancels a waiting session acquisition on the server', async () => {
    const { name, key } = unique('abort');
    const holder = await acquireSessionLock(newPool(), name);
    const controller = new AbortController();
    const waiting = acquireSessionLock(newPool(), name, { signal: controller.signal }).catch(
      (e: unknown) => e,
    );
    await fixtures.backdoor.waitForWaiters(key, 1);
    controller.abort();
    expect(LockAbortedError.is(await waiting)).toBe(true);
    expect(await fixtures.backdoor.locksOn(key)).toEqual([
      { pid: holder.pid, granted: true, mode: 'ExclusiveLock' },
    ]);
    await holder.release();
  });

  it("withSessionLock passes fn's error through and releases", async () => {
    const { name, key } = unique('with');
    const pool = newPool();
    const failure = new Error('job failed');
    const error = await withSessionLock(pool, name, async (signal) => {
      expect(signal.aborted).toBe(false);
      expect(await fixtures.backdoor.locksOn(key)).toHaveLength(1);
      throw failure;
    }).catch((e: unknown) => e);
    expect(error).toBe(failure);
    expect(await fixtures.backdoor.locksOn(key)).toEqual([]);
    expect(await withSessionLock(pool, name, async () => 'value')).toBe('value');
  });

  it('shared session locks coexist', async () => {
    const { name, key } = unique('shared');
    const a = await acquireSessionLock(newPool(), name, { shared: true });
    const b = await acquireSessionLock(newPool(), name, { shared: true, timeoutMs: 0 });
    expect((await fixtures.backdoor.locksOn(key)).map((l) => l.mode)).toEqual(['ShareLock', 'ShareLock']);
    expect(a.pid).not.toBe(b.pid);
    await Promise.all([a.release(), b.release()]);
    expect(await fixtures.backdoor.locksOn(key)).toEqual([]);
  });
});
