import { type Election, JOBS_TABLE_DDL, LockLostError, leader } from '@pglock/pg';
import { useLockTestFixtures } from '@pglock/test-kit';
import pg from 'pg';
import { afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { startTcpProxy, type TcpProxy } from '../src/tcp-proxy.ts';
import { spawnFixture } from './fixtures/spawn.ts';
import { measured } from './measure.ts';

// The failover figures of docs/scheduling.md: how long a standby waits once the leader is gone.

const url = inject('databaseUrl');
const fixtures = useLockTestFixtures('failover');
const { newPool, unique } = fixtures;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  // Another test file may be creating it at the same moment; the loser of that race just retries.
  await fixtures.backdoor.query(JOBS_TABLE_DDL).catch(() => fixtures.backdoor.query(JOBS_TABLE_DDL));
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

/** A standby campaign on its own pool that resolves `elected` with the time and term of its election. */
function standby(name: string, heartbeatMs = 1_000) {
  let resolve!: (value: { at: number; term: number }) => void;
  const elected = new Promise<{ at: number; term: number }>((r) => {
    resolve = r;
  });
  const campaign = leader(newPool(), name, {
    heartbeatMs,
    onElected: ({ term }: Election) => resolve({ at: performance.now(), term }),
  });
  cleanups.push(() => campaign.stop());
  return { campaign, elected };
}

describe('leader failover', () => {
  it('leader process SIGKILLed: a standby is elected within 1 s (5 runs)', async () => {
    const times: number[] = [];
    for (let run = 0; run < 5; run++) {
      const { name, key } = unique(`sigkill-${run}`);
      const first = spawnFixture('leader', [name], url);
      const { term } = (await first.first) as { term: number };
      const next = standby(name);
      await fixtures.backdoor.waitForWaiters(key, 1);
      const killedAt = performance.now();
      first.child.kill('SIGKILL');
      const elected = await next.elected;
      expect(elected.term).toBeGreaterThan(term);
      times.push(measured(`leader SIGKILLed -> standby elected (run ${run + 1})`, elected.at - killedAt));
      await first.exited;
    }
    expect(Math.max(...times)).toBeLessThan(1_000);
  });

  it('silent network cut: the leader’s signal fires within 2 × heartbeatMs; the standby is elected once the server drops the session', async () => {
    const { name, key } = unique('cut');
    const heartbeatMs = 300;
    const idleSessionTimeoutMs = 1_500;
    const proxy: TcpProxy = await startTcpProxy(url);
    // The server sees a silent cut of an idle connection only through a timeout: idle_session_timeout
    // here; tcp_keepalives_* on a real network (the proxy's own kernel answers keepalive probes).
    const pool = new pg.Pool({
      connectionString: proxy.url,
      max: 2,
      connectionTimeoutMillis: 1_000,
      options: `-c idle_session_timeout=${idleSessionTimeoutMs}`,
    });
    pool.on('error', () => undefined);
    cleanups.push(
      () => pool.end(),
      () => proxy.close(),
    );
    let lost!: (value: { at: number; reason: unknown }) => void;
    const signalled = new Promise<{ at: number; reason: unknown }>((r) => {
      lost = r;
    });
    let firstTerm = 0;
    const first = leader(pool, name, {
      heartbeatMs,
      retryMs: 60_000,
      onError: () => undefined,
      onElected: ({ term, signal }) => {
        firstTerm ||= term;
        signal.addEventListener('abort', () => lost({ at: performance.now(), reason: signal.reason }), {
          once: true,
        });
      },
    });
    cleanups.push(() => first.stop());
    await fixtures.backdoor.waitFor('the first leader', async () => first.isLeader);
    const next = standby(name, heartbeatMs);
    await fixtures.backdoor.waitForWaiters(key, 1);
    const cutAt = performance.now();
    proxy.cut();
    const { at: lostAt, reason } = await signalled;
    expect(LockLostError.is(reason)).toBe(true);
    const signalMs = measured(
      `silent cut -> leader's signal aborts (heartbeatMs ${heartbeatMs})`,
      lostAt - cutAt,
    );
    expect(signalMs).toBeLessThan(2 * heartbeatMs + 200);
    const elected = await next.elected;
    const electedMs = measured(
      `silent cut -> standby elected (idle_session_timeout ${idleSessionTimeoutMs} ms)`,
      elected.at - cutAt,
    );
    expect(elected.term).toBeGreaterThan(firstTerm);
    // Never two leaders: the deposed one had stopped before the standby could be elected.
    expect(electedMs).toBeGreaterThan(signalMs);
    expect(electedMs).toBeLessThan(idleSessionTimeoutMs + 2_000);
  });

  it('leader process frozen (SIGSTOP): the standby is elected once the server drops the session; the old term is fenced off', async () => {
    const { name, key } = unique('sigstop');
    const idleSessionTimeoutMs = 1_500;
    const first = spawnFixture(
      'leader',
      [name, '300', `-c idle_session_timeout=${idleSessionTimeoutMs}`],
      url,
    );
    cleanups.push(async () => first.child.kill('SIGKILL'));
    const lines: Record<string, unknown>[] = [];
    first.child.stdout?.on('data', (chunk) => {
      for (const line of String(chunk).split('\n').filter(Boolean))
        lines.push({ ...JSON.parse(line), at: performance.now() });
    });
    const { term: oldTerm } = (await first.first) as { term: number };
    const next = standby(name);
    await fixtures.backdoor.waitForWaiters(key, 1);
    const stoppedAt = performance.now();
    first.child.kill('SIGSTOP');
    const elected = await next.elected;
    measured(
      `leader frozen (SIGSTOP) -> standby elected (idle_session_timeout ${idleSessionTimeoutMs} ms)`,
      elected.at - stoppedAt,
    );
    expect(elected.term).toBeGreaterThan(oldTerm);
    const resumedAt = performance.now();
    first.child.kill('SIGCONT');
    await fixtures.backdoor.waitFor('the frozen leader to notice', async () =>
      lines.some((line) => 'ended' in line),
    );
    const ended = lines.find((line) => 'ended' in line) as { ended: string; at: number };
    expect(ended.ended).toBe('LockLostError');
    measured('frozen leader resumed (SIGCONT) -> its signal aborts', ended.at - resumedAt);
    // Until it noticed, it believed it led: the fencing guard of docs/scheduling.md refuses its writes.
    const table = `failover_fenced_${Math.random().toString(36).slice(2, 10)}`;
    await fixtures.backdoor.query(
      `CREATE TABLE ${table} (id int PRIMARY KEY, value text, term bigint NOT NULL)`,
    );
    try {
      const write = (value: string, term: number) =>
        fixtures.backdoor.query(
          `INSERT INTO ${table} AS t (id, value, term) VALUES (1, $1, $2) ON CONFLICT (id) DO UPDATE SET value = excluded.value, term = excluded.term WHERE t.term <= excluded.term RETURNING value`,
          [value, term],
        );
      expect(await write('from the new leader', elected.term)).toHaveLength(1);
      expect(await write('late, from the deposed leader', oldTerm)).toHaveLength(0);
      expect(await fixtures.backdoor.query(`SELECT value FROM ${table}`)).toEqual([
        { value: 'from the new leader' },
      ]);
    } finally {
      await fixtures.backdoor.query(`DROP TABLE ${table}`);
    }
  });

  it('leader backend terminated (pg_terminate_backend): the standby is elected at once', async () => {
    const { name, key } = unique('terminate');
    let lost = 0;
    const first = leader(newPool(), name, {
      retryMs: 60_000,
      onElected: ({ signal }) => {
        signal.addEventListener('abort', () => {
          lost = performance.now();
        });
      },
    });
    cleanups.push(() => first.stop());
    await fixtures.backdoor.waitFor('the first leader', async () => first.isLeader);
    const next = standby(name);
    await fixtures.backdoor.waitForWaiters(key, 1);
    const [holder] = (await fixtures.backdoor.locksOn(key)).filter((lock) => lock.granted);
    const terminatedAt = performance.now();
    await fixtures.backdoor.query('SELECT pg_terminate_backend($1)', [holder!.pid]);
    const elected = await next.elected;
    measured('pg_terminate_backend of the leader -> its signal aborts', lost - terminatedAt);
    expect(
      measured('pg_terminate_backend of the leader -> standby elected', elected.at - terminatedAt),
    ).toBeLessThan(1_000);
  });
});
