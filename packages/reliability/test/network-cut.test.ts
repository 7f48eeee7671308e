import { lockKey } from '@pglock/core';
import { acquireSessionLock, LockLostError, withLock } from '@pglock/pg';
import { Backdoor } from '@pglock/test-kit';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { startTcpProxy, type TcpProxy } from '../src/tcp-proxy.ts';
import { measured, timed } from './measure.ts';

const url = inject('databaseUrl');
let backdoor: Backdoor;
const cleanups: (() => Promise<unknown>)[] = [];
const unique = (label: string) => {
  const name = `reliability:${label}:${Math.random()}`;
  return { name, key: (lockKey(name) as { value: bigint }).value };
};
async function proxiedPool(options = ''): Promise<{ proxy: TcpProxy; pool: pg.Pool }> {
  const proxy = await startTcpProxy(url);
  const pool = new pg.Pool({ connectionString: proxy.url, max: 2, options });
  pool.on('error', () => undefined);
  cleanups.push(
    () => proxy.close(),
    () => pool.end(),
  );
  return { proxy, pool };
}

beforeAll(async () => {
  backdoor = await Backdoor.open(url);
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});
afterAll(() => backdoor.close());

describe('silent network cut (a proxy that stops forwarding, no FIN/RST)', () => {
  it('the session-lock holder learns within two heartbeats; idle_session_timeout frees it on the server', async () => {
    const { name, key } = unique('cut-session');
    const heartbeatMs = 300;
    // The server cannot see a silent cut on an idle connection except by a timeout: idle_session_timeout
    // here (tcp_keepalives_* on a real network, where the proxy's own kernel does not answer the probes).
    const { proxy, pool } = await proxiedPool('-c idle_session_timeout=1500');
    const handle = await acquireSessionLock(pool, name, { heartbeatMs });
    const lost = new Promise<number>((resolve) =>
      handle.signal.addEventListener('abort', () => resolve(performance.now()), { once: true }),
    );
    const cutAt = performance.now();
    proxy.cut();
    const ms = measured('silent cut -> session-lock signal aborts (heartbeatMs 300)', (await lost) - cutAt);
    expect(ms).toBeLessThan(2 * heartbeatMs + 200);
    expect(LockLostError.is(handle.signal.reason)).toBe(true);
    expect(String((handle.signal.reason as Error).message)).toMatch(/did not answer a heartbeat/);
    await backdoor.waitFor(
      'the server to free the lock',
      async () => (await backdoor.locksOn(key)).length === 0,
    );
    measured(
      'silent cut -> server frees the session lock (idle_session_timeout 1500 ms)',
      performance.now() - cutAt,
    );
    expect(LockLostError.is(await handle.release().catch((e: unknown) => e))).toBe(true);
  });

  it('a withLock holder cut mid-callback: settles within pg query_timeout; the server frees the lock', async () => {
    const { name, key } = unique('cut-withlock');
    const proxy = await startTcpProxy(url);
    // query_timeout bounds every statement on the client, ROLLBACK included; the server side is
    // bounded by idle_in_transaction_session_timeout.
    const pool = new pg.Pool({
      connectionString: proxy.url,
      max: 2,
      query_timeout: 1_000,
      options: '-c idle_in_transaction_session_timeout=1000',
    });
    pool.on('error', () => undefined);
    cleanups.push(
      () => proxy.close(),
      () => pool.end(),
    );
    let cutAt = 0;
    const call = timed(
      withLock(pool, name, async (client) => {
        proxy.cut();
        cutAt = performance.now();
        await client.query('SELECT 1');
      }),
    );
    await backdoor.waitFor(
      'the server to free the lock',
      async () => cutAt > 0 && (await backdoor.locksOn(key)).length === 0,
    );
    measured(
      'silent cut -> server frees a withLock lock (idle_in_transaction_session_timeout 1000 ms)',
      performance.now() - cutAt,
    );
    const outcome = await call;
    expect(String(outcome.error)).toMatch(/Query read timeout/);
    expect(measured('silent cut -> withLock rejects (pg query_timeout 1000 ms)', outcome.ms)).toBeLessThan(
      5_000,
    );
  });

  it('without a client-side timeout, a cut withLock stays pending until the socket dies', async () => {
    const { name } = unique('cut-unbounded');
    const { proxy, pool } = await proxiedPool();
    const call = timed(
      withLock(pool, name, async (client) => {
        proxy.cut();
        await client.query('SELECT 1');
      }),
    );
    const settledEarly = await Promise.race([
      call.then(() => true),
      new Promise((r) => setTimeout(() => r(false), 2_500)),
    ]);
    expect(settledEarly).toBe(false);
    // Only the OS can end it on a real network (TCP keepalive, tcp_retries2 ~15 min); here, closing the proxy does.
    await proxy.close();
    expect((await call).error).toBeDefined();
  });
});
