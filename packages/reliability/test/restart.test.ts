import { acquireSessionLock, LockLostError, withLock } from '@pglock/pg';
import { type EmbeddedServer, startEmbeddedServer } from '@pglock/test-kit';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { measured, sleep, timed } from './measure.ts';

// A private server: restarting the shared test database would break every other test file.
let server: EmbeddedServer;
beforeAll(async () => {
  server = await startEmbeddedServer();
}, 120_000);
afterAll(() => server?.stop());

it('PostgreSQL restarted under load: every call settles, nothing leaks, the pool recovers', {
  timeout: 120_000,
}, async () => {
  const pool = new pg.Pool({ connectionString: server.url, max: 4 });
  pool.on('error', () => undefined);
  const session = await acquireSessionLock(pool, 'restart:session', { heartbeatMs: 200 });
  const lost = new Promise<number>((resolve) =>
    session.signal.addEventListener('abort', () => resolve(performance.now()), { once: true }),
  );
  let stop = false;
  const outcomes = { ok: 0, failed: 0 };
  // Eight callers in a loop on three keys, each section holding its lock across a statement.
  const callers = Array.from({ length: 8 }, async (_, i) => {
    while (!stop) {
      const call = await timed(
        withLock(pool, `restart:${i % 3}`, async (client) => {
          await client.query('SELECT pg_sleep(0.02)');
        }),
      );
      if (call.error === undefined) outcomes.ok++;
      else outcomes.failed++;
      // Every call settles well inside the restart itself.
      expect(call.ms).toBeLessThan(30_000);
      if (call.error !== undefined) await sleep(50);
    }
  });
  await sleep(500);
  const restartAt = performance.now();
  await server.restart();
  measured('PostgreSQL fast-shutdown restart (embedded 18)', performance.now() - restartAt);
  measured('restart -> session-lock signal aborts', (await lost) - restartAt);
  expect(LockLostError.is(session.signal.reason)).toBe(true);
  // Recovery: the first withLock that commits after the server is back.
  const back = performance.now();
  for (;;) {
    const call = await timed(withLock(pool, 'restart:probe', async () => 'ok'));
    if (call.value === 'ok') break;
    await sleep(20);
  }
  measured('server back -> first successful withLock on the same pool', performance.now() - back);
  const failedAtRestart = outcomes.failed;
  const okBefore = outcomes.ok;
  await sleep(1_000);
  stop = true;
  await Promise.all(callers);
  expect(failedAtRestart).toBeGreaterThan(0);
  expect(outcomes.ok).toBeGreaterThan(okBefore);
  // Nothing leaked: no client is still checked out, the pool is within its size, no lock is held.
  expect(pool.totalCount).toBeLessThanOrEqual(4);
  expect(pool.idleCount).toBe(pool.totalCount);
  expect(pool.waitingCount).toBe(0);
  const { rows } = await pool.query(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory'`);
  expect(rows[0].n).toBe(0);
  expect(LockLostError.is(await session.release().catch((e: unknown) => e))).toBe(true);
  await pool.end();
});
