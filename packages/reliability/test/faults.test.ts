import {
  AdvisoryLockError,
  acquireSessionLock,
  LockLostError,
  LockNotAcquiredError,
  withLock,
} from '@pglock/pg';
import { useLockTestFixtures } from '@pglock/test-kit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type Subject, subjects } from '../src/subjects.ts';
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

describe.each(subjects)('holder backend terminated (pg_terminate_backend), $name', (definition) => {
  let subject: Subject;
  beforeAll(async () => {
    subject = await definition.open(url);
  });
  afterAll(() => subject?.close());

  // On postgres.js the ORM writes its own ROLLBACK (or COMMIT) to the dead connection, and postgres.js
  // 3.4.9 throws that write from a timer: the test process dies whatever the lock library does
  // (porsager/postgres #1208; docs/reliability.md has the patch). The chaos run covers these drivers,
  // with a verdict per crash on whose write it was.
  const ormCrash =
    definition.driver === 'postgres.js'
      ? "the ORM's own ROLLBACK/COMMIT on the dead connection crashes postgres.js 3.4.9 (porsager/postgres #1208)"
      : undefined;
  it.skipIf(ormCrash).each(['running JavaScript', 'running a statement'] as const)(
    `withLock rejects with the server error while %s, never resolves, and the process survives${ormCrash ? ` (skipped: ${ormCrash})` : ''}`,
    async (during) => {
      const { name, key } = unique(`terminate-${definition.name}`);
      let pid = 0;
      const call = timed(
        subject.withLock(name, async (sql) => {
          pid = Number((await sql('SELECT pg_backend_pid() AS pid'))[0]?.pid);
          if (during === 'running a statement') await sql('SELECT 1 AS one FROM pg_sleep(30)');
          else await sleep(500); // returns after the termination, as an unaware callback would
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
      expect(outcome.error).toBeDefined();
      measured(
        `pg_terminate_backend of a ${definition.name} withLock holder ${during} -> withLock rejects`,
        outcome.ms,
      );
      expect(await fixtures.backdoor.locksOn(key)).toEqual([]);
      // The dead connection was not handed back for reuse: the next calls work.
      for (let i = 0; i < 3; i++) expect(await subject.withLock(name, async () => 'next')).toBe('next');
    },
  );

  it.skipIf(!definition.session)(
    'a session lock signal aborts with LockLostError within its heartbeat bound',
    async () => {
      const { name } = unique(`session-terminate-${definition.name}`);
      const heartbeatMs = 500;
      const handle = await subject.session!.acquireSessionLock(name, { heartbeatMs });
      const lost = new Promise<number>((resolve) =>
        handle.signal.addEventListener('abort', () => resolve(performance.now()), { once: true }),
      );
      const at = performance.now();
      await fixtures.backdoor.query('SELECT pg_terminate_backend($1)', [handle.pid]);
      const ms = measured(
        `pg_terminate_backend of a ${definition.name} session-lock holder -> signal aborts`,
        (await lost) - at,
      );
      // A heartbeat from another connection (postgres.js, which must not write to a failed connection) may first wait for one.
      expect(ms).toBeLessThan(definition.driver === 'postgres.js' ? 2_500 + heartbeatMs : 2 * heartbeatMs);
      expect(LockLostError.is(handle.signal.reason)).toBe(true);
      expect(LockLostError.is(await handle.release().catch((e: unknown) => e))).toBe(true);
      // The next session lock on the same database works (no dead connection handed back).
      const next = await subject.session!.acquireSessionLock(name, { heartbeatMs });
      await next.release();
    },
  );
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
  it('20 callers of one key on a pool of 2: only the first waits on a connection, all settle within timeoutMs', async () => {
    const { name } = unique('exhaustion');
    const holder = await acquireSessionLock(newPool(), name);
    const pool = newPool({ max: 2 });
    const started = performance.now();
    const calls = Array.from({ length: 20 }, () =>
      timed(withLock(pool, name, async () => 'ran', { timeoutMs: 200 })),
    );
    // Callers of one key queue in the process; only the head waits on the server, on one connection.
    await sleep(100);
    expect(pool.totalCount - pool.idleCount).toBe(1);
    const outcomes = await Promise.all(calls);
    expect(outcomes.filter((o) => LockNotAcquiredError.is(o.error))).toHaveLength(20);
    // timeoutMs bounds the whole call, the wait in the process's queue included.
    measured(
      'pool of 2, 20 callers of one held key (timeoutMs 200) -> all settled',
      performance.now() - started,
    );
    expect(Math.max(...outcomes.map((o) => o.ms))).toBeLessThan(1_000);
    await holder.release();
    // Released: the same 20 callers all run, one after the other, on the pool of 2.
    const after = await Promise.all(
      Array.from({ length: 20 }, () => withLock(pool, name, async () => 'ran', { timeoutMs: 5_000 })),
    );
    expect(after).toEqual(Array.from({ length: 20 }, () => 'ran'));
    expect(pool.totalCount).toBeLessThanOrEqual(2);
    expect(pool.waitingCount).toBe(0);
  });

  it('20 callers of 20 held keys on a pool of 2: timeoutMs bounds the wait for a pooled connection too', async () => {
    const names = Array.from({ length: 20 }, (_, i) => unique(`exhaustion-keys-${i}`).name);
    const holder = await acquireSessionLock(newPool(), names);
    const pool = newPool({ max: 2 });
    const started = performance.now();
    const outcomes = await Promise.all(
      names.map((name) => timed(withLock(pool, name, async () => 'ran', { timeoutMs: 300 }))),
    );
    await holder.release();
    expect(outcomes.filter((o) => LockNotAcquiredError.is(o.error))).toHaveLength(20);
    // One after the other, two at a time, would take 10 × 300 ms.
    measured(
      'pool of 2, 20 callers of 20 held keys (timeoutMs 300) -> all settled',
      performance.now() - started,
    );
    expect(Math.max(...outcomes.map((o) => o.ms))).toBeLessThan(2_500);
  });

  it("with the pool's connectionTimeoutMillis below timeoutMs, the pool's own error comes first", async () => {
    const names = Array.from({ length: 20 }, (_, i) => unique(`exhaustion-queue-${i}`).name);
    const holder = await acquireSessionLock(newPool(), names);
    const pool = newPool({ max: 2, connectionTimeoutMillis: 100 });
    const outcomes = await Promise.all(
      names.map((name) => timed(withLock(pool, name, async () => 'ran', { timeoutMs: 300 }))),
    );
    await holder.release();
    // Two callers got a connection and waited out their timeoutMs on the server; the rest never got one.
    expect(outcomes.filter((o) => LockNotAcquiredError.is(o.error))).toHaveLength(2);
    const queued = outcomes.filter((o) => !LockNotAcquiredError.is(o.error));
    expect(queued).toHaveLength(18);
    for (const o of queued) expect(String(o.error)).toMatch(/timeout exceeded when trying to connect/);
    expect(AdvisoryLockError.is(queued[0]?.error)).toBe(false);
  });
});
