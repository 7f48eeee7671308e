import {
  AdvisoryLockError,
  acquireSessionLock,
  LockLostError,
  LockNotAcquiredError,
  withLock,
} from '@pglock/pg';
import { useLockTestFixtures } from '@pglock/test-kit';
import { describe, expect, inject, it } from 'vitest';
import { spawnFixture } from './fixtures/spawn.ts';
import { measured, sleep, timed } from './measure.ts';

const url = inject('databaseUrl');
const fixtures = useLockTestFixtures('reliability');
const { newPool, unique } = fixtures;

describe('holder process SIGKILLed', () => {
  async function killHolder(label: string, args: readonly string[]): Promise<number> {
    const { name, key } = unique(`sigkill-${label}`);
    const holder = spawnFixture('holder', [name, ...args], url);
    const { pid } = await holder.first;
    const waiter = withLock(
      newPool(),
      name,
      async (client) => (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid,
    );
    await fixtures.backdoor.waitForWaiters(key, 1);
    holder.child.kill('SIGKILL');
    const got = await timed(waiter);
    expect(got.value).not.toBe(pid);
    expect(await holder.exited).toBe(null);
    return measured(`SIGKILL of a holder ${label} -> waiter holds`, got.ms);
  }

  it('while idle in its transaction: PostgreSQL reads the closed socket at once', async () => {
    expect(await killHolder('idle in its transaction', ['idle'])).toBeLessThan(2_000);
  });

  it('while running a statement: the lock stays until the statement ends (no socket read meanwhile)', async () => {
    expect(await killHolder('running a 3 s statement (default settings)', ['busy', '3'])).toBeGreaterThan(
      2_000,
    );
  });

  it('while running a statement, with client_connection_check_interval: freed within the interval', async () => {
    const ms = await killHolder('running a 600 s statement, client_connection_check_interval=250ms', [
      'busy',
      '600',
      '-c client_connection_check_interval=250',
    ]);
    expect(ms).toBeLessThan(2_000);
  });
});

describe('holder backend terminated (pg_terminate_backend)', () => {
  it.each(['running JavaScript', 'running a statement'] as const)(
    'withLock rejects with the server error while %s, never resolves, and the process survives',
    async (during) => {
      const { name, key } = unique('terminate');
      const pool = newPool();
      let pid = 0;
      const call = timed(
        withLock(pool, name, async (client) => {
          pid = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
          if (during === 'running a statement') await client.query('SELECT pg_sleep(30)');
          else await sleep(30_000 - 29_500); // returns after the termination, as an unaware callback would
          return 'committed';
        }),
      );
      await fixtures.backdoor.waitFor(
        'the holder',
        async () => pid !== 0 && (await fixtures.backdoor.locksOn(key)).length === 1,
      );
      await fixtures.backdoor.query('SELECT pg_terminate_backend($1)', [pid]);
      const outcome = await call;
      expect(outcome.value).toBeUndefined();
      expect(outcome.error).toMatchObject({ code: '57P01' });
      measured(`pg_terminate_backend of a withLock holder ${during} -> withLock rejects`, outcome.ms);
      expect(await fixtures.backdoor.locksOn(key)).toEqual([]);
      // The dead client was not returned to the pool: the next call works.
      expect(await withLock(pool, name, async () => 'next')).toBe('next');
    },
  );

  it('a session lock signal aborts with LockLostError within its heartbeat bound', async () => {
    const { name } = unique('session-terminate');
    const heartbeatMs = 500;
    const handle = await acquireSessionLock(newPool(), name, { heartbeatMs });
    const lost = new Promise<number>((resolve) =>
      handle.signal.addEventListener('abort', () => resolve(performance.now()), { once: true }),
    );
    const at = performance.now();
    await fixtures.backdoor.query('SELECT pg_terminate_backend($1)', [handle.pid]);
    const ms = measured('pg_terminate_backend of a session-lock holder -> signal aborts', (await lost) - at);
    expect(ms).toBeLessThan(2 * heartbeatMs);
    expect(LockLostError.is(handle.signal.reason)).toBe(true);
  });
});

describe('idle_in_transaction_session_timeout', () => {
  it('ends a long withLock with the server error, frees the lock, and the process survives', async () => {
    const { name, key } = unique('idle-timeout');
    const pool = newPool({ options: '-c idle_in_transaction_session_timeout=300' });
    const started = performance.now();
    const call = timed(
      withLock(pool, name, async (client) => {
        await sleep(1_000);
        await client.query('SELECT 1');
        return 'committed';
      }),
    );
    await fixtures.backdoor.waitFor(
      'the holder',
      async () => (await fixtures.backdoor.locksOn(key)).length === 1,
    );
    await fixtures.backdoor.waitFor(
      'the server to free the lock',
      async () => (await fixtures.backdoor.locksOn(key)).length === 0,
    );
    measured(
      'idle_in_transaction_session_timeout=300 ms -> lock freed on the server',
      performance.now() - started,
    );
    const outcome = await call;
    expect(outcome.value).toBeUndefined();
    // fn's own statement is what fails (fn's errors reach the caller unchanged): node-postgres reports
    // the dead connection, whose FATAL 25P03 it had received while fn slept.
    expect(String(outcome.error)).toMatch(/connection error|idle-in-transaction timeout/);
  });
});

describe('pool exhaustion', () => {
  it('20 callers with timeouts on a pool of 2 all finish with a result or LockNotAcquiredError', async () => {
    const { name } = unique('exhaustion');
    const holder = await acquireSessionLock(newPool(), name);
    const pool = newPool({ max: 2 });
    const started = performance.now();
    const calls = Array.from({ length: 20 }, () =>
      timed(withLock(pool, name, async () => 'ran', { timeoutMs: 200 })),
    );
    setTimeout(() => void holder.release(), 1_000);
    const outcomes = await Promise.all(calls);
    const ran = outcomes.filter((o) => o.value === 'ran').length;
    const timedOut = outcomes.filter((o) => LockNotAcquiredError.is(o.error)).length;
    expect(ran + timedOut).toBe(20);
    expect(ran).toBeGreaterThan(0);
    expect(timedOut).toBeGreaterThan(0);
    // timeoutMs bounds the lock wait, not the queue for a pool connection: a waiting caller holds one.
    measured('pool of 2, 20 callers (timeoutMs 200) -> all settled', performance.now() - started);
    expect(Math.max(...outcomes.map((o) => o.ms))).toBeLessThan(20 * 200);
    expect(pool.totalCount).toBeLessThanOrEqual(2);
    expect(pool.waitingCount).toBe(0);
  });

  it('a pool connectionTimeoutMillis bounds the queue for a connection too', async () => {
    const { name } = unique('exhaustion-queue');
    const holder = await acquireSessionLock(newPool(), name);
    const pool = newPool({ max: 2, connectionTimeoutMillis: 100 });
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, () => timed(withLock(pool, name, async () => 'ran', { timeoutMs: 300 }))),
    );
    await holder.release();
    expect(outcomes.every((o) => o.error !== undefined)).toBe(true);
    expect(outcomes.filter((o) => LockNotAcquiredError.is(o.error))).toHaveLength(2);
    expect(
      outcomes.filter((o) => /timeout exceeded when trying to connect/.test(String(o.error))),
    ).toHaveLength(18);
    expect(AdvisoryLockError.is(outcomes.find((o) => !LockNotAcquiredError.is(o.error))?.error)).toBe(false);
  });
});
