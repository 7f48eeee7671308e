import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { Backdoor } from '@pglock/test-kit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { acquireSessionLock, isLocked, lockChannels, tryWithLock, withLock } from '../src/index.ts';

const url = inject('databaseUrl');
let pool: pg.Pool;
let other: pg.Pool;
let backdoor: Backdoor;
let backdoorPool: pg.Pool;
beforeAll(async () => {
  pool = new pg.Pool({ connectionString: url, max: 2 });
  pool.on('error', () => undefined);
  other = new pg.Pool({ connectionString: url, max: 2 });
  backdoor = await Backdoor.open(url);
  backdoorPool = new pg.Pool({ connectionString: url, max: 1 });
});
afterAll(async () => {
  await Promise.all([pool.end(), other.end(), backdoor.close(), backdoorPool.end()]);
});

type Recorded = { channel: string; event: Record<string, unknown> };

/** Records every pglock event (for this test's keys only) while `run` runs. */
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

describe('diagnostics_channel events', () => {
  it('withLock publishes requested → acquired → released with one id, scope, mode and timings', async () => {
    const name = `diag:${Math.random()}`;
    const events = await record(name, async () => {
      await withLock(pool, name, async () => new Promise((resolve) => setTimeout(resolve, 20)), {
        shared: true,
      });
    });
    expect(events.map((e) => e.channel)).toEqual([
      lockChannels.requested,
      lockChannels.acquired,
      lockChannels.released,
    ]);
    const ids = new Set(events.map((e) => e.event.id));
    expect(ids.size).toBe(1);
    expect(events[0]?.event).toMatchObject({ names: [name], scope: 'transaction', mode: 'shared' });
    expect(events[1]?.event.waitMs).toBeTypeOf('number');
    expect(events[2]?.event.heldMs as number).toBeGreaterThanOrEqual(15);
  });

  it('a busy try publishes not-acquired with reason "busy"; a timeout with reason "timeout"', async () => {
    const name = `diag-busy:${Math.random()}`;
    let release!: () => void;
    const holding = withLock(other, name, () => new Promise<void>((resolve) => (release = resolve)));
    await backdoor.waitFor('the holder', () => isLocked(backdoorPool, name));
    const events = await record(name, async () => {
      expect(await tryWithLock(pool, name, async () => 'x')).toEqual({ acquired: false });
      await withLock(pool, name, async () => 'x', { timeoutMs: 50 }).catch(() => undefined);
    });
    release();
    await holding;
    const ended = events.filter((e) => e.channel === lockChannels.notAcquired).map((e) => e.event.reason);
    expect(ended).toEqual(['busy', 'timeout']);
    expect(events.some((e) => e.channel === lockChannels.released)).toBe(false);
  });

  it('a session lock publishes released on release, and lost when its backend is terminated', async () => {
    const name = `diag-session:${Math.random()}`;
    const events = await record(name, async () => {
      const first = await acquireSessionLock(pool, name);
      await first.release();
      const second = await acquireSessionLock(pool, name, { heartbeatMs: 200 });
      const lost = new Promise((resolve) => second.signal.addEventListener('abort', resolve, { once: true }));
      await backdoor.query('SELECT pg_terminate_backend($1)', [second.pid]);
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
  });
});
