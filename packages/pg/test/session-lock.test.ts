import { useLockTestFixtures } from '@pglock/test-kit';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { acquireSessionLock, advisoryLocks, LockUsageError, withSessionLock } from '../src/index.ts';

// Session-lock behaviour is in the kit (packages/test-kit/src/suites/session-locks.ts); these are
// the node-postgres specifics: which client is pinned, and what a lone pg.Client gets.
const fixtures = useLockTestFixtures('session');
const { unique } = fixtures;
const clients: pg.Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.end()));
});

describe('session locks (@pglock/pg specifics)', () => {
  it('pins one client checked out of the pool and hands it back on release', async () => {
    const { name, key } = unique('pinned');
    const pool = fixtures.newPool({ max: 2 });
    const handle = await acquireSessionLock(pool, name);
    expect(pool.totalCount - pool.idleCount).toBe(1);
    expect(await fixtures.backdoor.locksOn(key)).toEqual([
      { pid: handle.pid, granted: true, mode: 'ExclusiveLock' },
    ]);
    await handle.release();
    expect(pool.idleCount).toBe(pool.totalCount);
    // Released cleanly: the same client is reused, not replaced.
    const again = await acquireSessionLock(pool, name);
    expect(again.pid).toBe(handle.pid);
    await again.release();
  });

  it('a lost lock destroys its client instead of handing it back', async () => {
    const { name } = unique('destroyed');
    const pool = fixtures.newPool({ max: 2 });
    const handle = await acquireSessionLock(pool, name, { heartbeatMs: 100 });
    const lost = new Promise((resolve) => handle.signal.addEventListener('abort', resolve, { once: true }));
    await fixtures.backdoor.query('SELECT pg_terminate_backend($1::int)', [handle.pid]);
    await lost;
    await handle.release().catch(() => undefined);
    await fixtures.backdoor.waitFor(
      'the dead client to leave the pool',
      async () => pool.totalCount === 0 || undefined,
    );
    const next = await withSessionLock(pool, name, async () => 'fresh client');
    expect(next).toBe('fresh client');
  });

  it('a lone pg.Client is refused for session locks with LockUsageError, before any SQL', async () => {
    const client = new pg.Client({ connectionString: fixtures.url });
    await client.connect();
    clients.push(client);
    let sent = 0;
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      sent++;
      return query(...args);
    };
    const locks = advisoryLocks(client);
    const { name } = unique('client');
    for (const run of [
      () => locks.acquireSessionLock(name),
      () => locks.tryAcquireSessionLock(name),
      () => locks.withSessionLock(name, async () => 'ran'),
    ]) {
      const error = await run().catch((e: unknown) => e);
      expect(LockUsageError.is(error), String(error)).toBe(true);
      expect((error as Error).message).toMatch(/pg\.Pool/);
    }
    expect(sent).toBe(0);
  });
});
