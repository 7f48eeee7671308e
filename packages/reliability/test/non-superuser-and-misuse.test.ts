import { randomUUID } from 'node:crypto';
import {
  AdvisoryLockError,
  acquireSessionLock,
  advisoryLocks,
  inspectLocks,
  LockAbortedError,
  LockLostError,
  lockKey,
  withLock,
  withSessionLock,
} from '@pglock/pg';
import { Backdoor } from '@pglock/test-kit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

const url = inject('databaseUrl');
const role = `pglock_plain_${randomUUID().replaceAll('-', '').slice(0, 10)}`;
const roleUrl = (() => {
  const u = new URL(url);
  u.username = role;
  u.password = 'plain-password';
  return u.href;
})();
let backdoor: Backdoor;
const pools: pg.Pool[] = [];
const poolOf = (connectionString: string) => {
  const pool = new pg.Pool({ connectionString, max: 3 });
  pool.on('error', () => undefined);
  pools.push(pool);
  return pool;
};

beforeAll(async () => {
  backdoor = await Backdoor.open(url);
  // LOGIN only: no superuser, no pg_read_all_stats, no grants. The password serves the embedded
  // server's password auth; the machine's PostgreSQL 15 trusts loopback.
  await backdoor.query(`CREATE ROLE ${role} LOGIN PASSWORD 'plain-password'`);
});
afterAll(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.end()));
  await backdoor.query(`DROP ROLE IF EXISTS ${role}`);
  await backdoor.close();
});

describe('as a role with LOGIN and nothing else', () => {
  it('withLock, tryWithLock, session locks, abort and isLocked work', async () => {
    const pool = poolOf(roleUrl);
    const [{ rolsuper }] = (await pool.query('SELECT rolsuper FROM pg_roles WHERE rolname = current_user'))
      .rows;
    expect(rolsuper).toBe(false);
    const locks = advisoryLocks(pool);
    const name = `plain:${randomUUID()}`;
    expect(await locks.withLock(name, async () => locks.isLocked(name))).toBe(true);
    const session = await acquireSessionLock(pool, name, { heartbeatMs: 100 });
    expect(await locks.tryWithLock(name, async () => 'ran')).toEqual({ acquired: false });
    const controller = new AbortController();
    const waiting = locks
      .withLock(name, async () => 'ran', { signal: controller.signal })
      .catch((e: unknown) => e);
    await backdoor.waitForWaiters((lockKey(name) as { value: bigint }).value, 1);
    controller.abort();
    expect(LockAbortedError.is(await waiting)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 250)); // two heartbeats as this role
    expect(session.signal.aborted).toBe(false);
    await session.release();
    expect(await locks.isLocked(name)).toBe(false);
  });

  it("inspectLocks lists another role's lock without its activity details, and shows no query text", async () => {
    const name = `plain-inspect:${randomUUID()}`;
    const held = await acquireSessionLock(poolOf(url), name);
    try {
      const rows = (await inspectLocks(poolOf(roleUrl))).filter((row) => row.pid === held.pid);
      expect(rows).toHaveLength(1);
      // pg_stat_activity hides other roles' state and address from a plain role.
      expect(rows[0]).toMatchObject({
        granted: true,
        mode: 'exclusive',
        state: null,
        clientAddress: null,
        heldMs: null,
      });
      expect(
        Object.values(rows[0] as object).some((v) => typeof v === 'string' && /SELECT|pg_advisory/i.test(v)),
      ).toBe(false);
    } finally {
      await held.release();
    }
  });
});

describe('misuse of releases and handles', () => {
  it('release twice: the second call is a no-op returning the first promise', async () => {
    const handle = await acquireSessionLock(poolOf(url), `misuse:${randomUUID()}`);
    const first = handle.release();
    expect(handle.release()).toBe(first);
    await first;
    await handle.release();
  });

  it('a handle after release: its signal stays quiet and release stays a no-op', async () => {
    const handle = await acquireSessionLock(poolOf(url), `misuse:${randomUUID()}`, { heartbeatMs: 50 });
    await handle.release();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(handle.signal.aborted).toBe(false);
    await expect(handle.release()).resolves.toBeUndefined();
  });

  it('releasing a lock that was lost rejects with LockLostError, every time', async () => {
    const handle = await acquireSessionLock(poolOf(url), `misuse:${randomUUID()}`, { heartbeatMs: 50 });
    await backdoor.query('SELECT pg_terminate_backend($1)', [handle.pid]);
    await backdoor.waitFor('the loss', async () => handle.signal.aborted);
    for (let i = 0; i < 2; i++)
      expect(LockLostError.is(await handle.release().catch((e: unknown) => e))).toBe(true);
  });

  it('the guarded unlock a release sends touches only what this connection holds, mode by mode', async () => {
    const { lockRequest, lockStatements, sessionUnlockStatements } = await import('@pglock/core/internal');
    const client = new pg.Client(url);
    await client.connect();
    try {
      const run = async (s: { text: string; values: readonly string[] }) =>
        (await client.query(s.text, [...s.values])).rows;
      const name = `misuse:${randomUUID()}`;
      const { keys } = lockRequest(name);
      const [unlockExclusive] = sessionUnlockStatements(keys, false);
      const [unlockShared] = sessionUnlockStatements(keys, true);
      // Not held: no row, so core reports LockLostError instead of releasing someone else's count.
      expect(await run(unlockExclusive!)).toEqual([]);
      const [take] = lockStatements(keys, 'session', false, 'try');
      expect((await run(take!)).map((row) => row.ok)).toEqual([true]);
      // Shared and exclusive are different locks: unlocking the shared one does not touch the exclusive.
      expect(await run(unlockShared!)).toEqual([]);
      expect(await backdoor.locksOn((lockKey(name) as { value: bigint }).value)).toHaveLength(1);
      expect((await run(unlockExclusive!)).map((row) => row.ok)).toEqual([true]);
      expect(await backdoor.locksOn((lockKey(name) as { value: bigint }).value)).toEqual([]);
    } finally {
      await client.end();
    }
  });

  it('using the callback client after withLock returned: the lock is already gone', async () => {
    const pool = poolOf(url);
    const name = `misuse:${randomUUID()}`;
    let leaked: pg.PoolClient | undefined;
    await withLock(pool, name, async (client) => {
      leaked = client;
    });
    expect(await advisoryLocks(pool).isLocked(name)).toBe(false);
    expect(leaked).toBeDefined();
  });

  it('withSessionLock: a throwing fn releases, and its error (not a release error) reaches the caller', async () => {
    const failure = new AdvisoryLockError('LOCK_USAGE', 'from fn');
    const name = `misuse:${randomUUID()}`;
    expect(
      await withSessionLock(poolOf(url), name, async () => Promise.reject(failure)).catch((e: unknown) => e),
    ).toBe(failure);
    expect(await backdoor.locksOn((lockKey(name) as { value: bigint }).value)).toEqual([]);
  });
});
