import {
  type Election,
  InvalidLockOptionsError,
  JOBS_TABLE_DDL,
  type LeaderCampaign,
  type LeaderOptions,
} from '@pglock/core';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Child, processTestTimeout } from '../child.ts';
import {
  deferred,
  firstReason,
  type SuiteContext,
  serverMajor,
  settlesWithin,
  sleep,
  withServerSettings,
} from '../context.ts';
import type { AdapterInstance } from '../harness.ts';
import { startTcpProxy } from '../tcp-proxy.ts';
import { noLeaderReason } from './leader-helpers.ts';

// Serialises creating pglock_jobs with the scheduling suite's set-up in parallel test files.
const SETUP_KEY = '8120031911';
/** The lease of these tests: short, so that a frozen leader's replacement is seen in seconds. */
const LEASE_MS = 1_500;
/** What a failover may take beyond the fault's own bound, on a loaded machine (issue 24). */
const FAILOVER_SLACK_MS = 1_000;

function leaderOf(instance: AdapterInstance): (name: string, options: LeaderOptions) => LeaderCampaign {
  const start = instance.locks.leader;
  if (start === undefined) throw new Error('the adapter has no leader');
  return start;
}

const caught = (fn: () => unknown): unknown => {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
};

/**
 * `leader`'s `leaseMs`: with PostgreSQL's default settings, a leader killed, frozen (SIGSTOP) or cut
 * off silently is replaced within its bound, its signal aborts first, and its fenced writes are
 * refused once it wakes; a healthy leader keeps its term (`vitest -t leaderLease`).
 */
export function leaderLeaseSuite(ctx: SuiteContext): void {
  describe('leaderLease', () => leaseTests(ctx));
}

function leaseTests(ctx: SuiteContext): void {
  const { capabilities } = ctx.harness;
  const noSession = noLeaderReason(ctx);
  const noProcesses = firstReason(noSession, ctx.noProcesses);
  let major = 0;

  beforeAll(async () => {
    major = await serverMajor(ctx.backdoor);
    await ctx.backdoor.query('SELECT pg_advisory_lock($1::bigint)', [SETUP_KEY]);
    try {
      await ctx.backdoor.query(JOBS_TABLE_DDL);
    } finally {
      await ctx.backdoor.query('SELECT pg_advisory_unlock($1::bigint)', [SETUP_KEY]);
    }
  });

  describe.skipIf(noSession)(`lease of one process${noSession ? ` (skipped: ${noSession})` : ''}`, () => {
    it('bad leaseMs, or a heartbeatMs above half of it, is InvalidLockOptionsError before any SQL', async () => {
      const instance = await ctx.open();
      const before = instance.statementCount();
      const start = leaderOf(instance);
      const onElected = () => undefined;
      for (const options of [
        { leaseMs: '5s' },
        { leaseMs: 50 },
        { leaseMs: 1.5 },
        { leaseMs: 2 ** 31 },
        { leaseMs: 1_500, heartbeatMs: 800 },
        { leaseMs: 1_000, heartbeatMs: 1_000 },
      ]) {
        const error = caught(() => start('x', { onElected, ...(options as Partial<LeaderOptions>) }));
        expect(InvalidLockOptionsError.is(error), JSON.stringify(options)).toBe(true);
        expect((error as Error).message).toMatch(/leaseMs/);
      }
      expect(InvalidLockOptionsError.is(caught(() => start('x', { onElected, lease: 5 } as never)))).toBe(
        true,
      );
      if (capabilities.countsStatements) expect(instance.statementCount()).toBe(before);
    });

    it(`a healthy leader keeps its term for 3 × leaseMs (${LEASE_MS} ms, the default heartbeat); the leader's and a stopped standby's connections go back with their own idle_session_timeout`, async ({
      skip,
    }) => {
      if (major < 14) skip('idle_session_timeout needs PostgreSQL 14');
      const { name, key } = ctx.name('lease-healthy');
      // The pool's own setting, which the leader's connection must get back: not the lease's.
      const own = '1h';
      const instance = await ctx.open({
        url: withServerSettings(ctx.url, { idle_session_timeout: own }),
        max: 3,
      });
      const terms: { term: number; reason?: unknown }[] = [];
      const errors: unknown[] = [];
      const campaign = leaderOf(instance)(name, {
        leaseMs: LEASE_MS,
        onElected: ({ term, signal }: Election) => {
          const entry: { term: number; reason?: unknown } = { term };
          terms.push(entry);
          signal.addEventListener('abort', () => {
            entry.reason = signal.reason;
          });
        },
        onError: (error) => errors.push(error),
      });
      try {
        await ctx.backdoor.waitFor('elected', async () => campaign.isLeader);
        const [holder] = (await ctx.backdoor.locksOn(key)).filter((lock) => lock.granted);
        // A standby on the same pool, stopped while it waits: its connection was set for the lease too.
        if (capabilities.concurrentCalls !== false) {
          const standby = leaderOf(instance)(name, {
            leaseMs: LEASE_MS,
            onElected: () => undefined,
            onError: (error) => errors.push(error),
          });
          await ctx.backdoor.waitForWaiters(key, 1);
          await standby.stop();
        }
        await sleep(3 * LEASE_MS);
        expect(terms.map((t) => String(t.reason ?? 'leading'))).toEqual(['leading']);
        expect(campaign.isLeader).toBe(true);
        expect(campaign.term).toBe(terms[0]?.term);
        expect(errors.map(String)).toEqual([]);
        expect(await ctx.backdoor.locksOn(key)).toEqual([
          { pid: holder?.pid, granted: true, mode: 'ExclusiveLock' },
        ]);
      } finally {
        await campaign.stop();
      }
      expect(await ctx.backdoor.locksOn(key)).toEqual([]);
      // Every connection of the pool (the leader's and the standby's among them, unless the adapter
      // closed them) is asked at once; a lone client has one.
      const connections = capabilities.concurrentCalls === false ? 1 : 3;
      const all = deferred();
      let asked = 0;
      const seen = await Promise.all(
        Array.from({ length: connections }, (_, i) =>
          instance.withLock(ctx.name(`lease-probe-${i}`).name, async (sql) => {
            const [row] = await sql('SHOW idle_session_timeout');
            if (++asked === connections) all.resolve();
            await settlesWithin(all.promise, 5_000, 'every pooled connection');
            return row?.idle_session_timeout;
          }),
        ),
      );
      expect(seen).toEqual(Array.from({ length: connections }, () => own));
    });
  });

  describe.skipIf(noProcesses)(
    `failover with the server's default settings, leaseMs ${LEASE_MS}${noProcesses ? ` (skipped: ${noProcesses})` : ''}`,
    { timeout: processTestTimeout },
    () => {
      // Every worker a test started, killed after it whatever happened (a failed test included).
      const spawned: { child: Child; key: bigint }[] = [];
      afterEach(async () => {
        const ended = spawned.splice(0);
        for (const { child } of ended) {
          child.kill('SIGKILL');
          await child.exited;
        }
        for (const key of new Set(ended.map((entry) => entry.key))) {
          await ctx.backdoor.waitFor(
            'no lock left',
            async () => (await ctx.backdoor.locksOn(key)).length === 0,
          );
        }
      });

      /** A fence row, a leader process elected on `leaderUrl`, and a standby process waiting. */
      async function leaderAndStandby(label: string, leaderUrl = ctx.url) {
        const table = ctx.table();
        await ctx.backdoor.query(
          `CREATE TABLE ${table}_rows (id int PRIMARY KEY, term bigint NOT NULL, writer int NOT NULL)`,
        );
        await ctx.backdoor.query(`INSERT INTO ${table}_rows VALUES (1, 0, 0)`);
        const { name, key } = ctx.name(label);
        const args = { key: name, table, leaseMs: LEASE_MS };
        const leading = new Child(ctx.harness, leaderUrl, 'leaderLease', args);
        spawned.push({ child: leading, key });
        const first = await leading.next('elected');
        expect(await leading.next('fenced')).toMatchObject({ rows: 1 });
        const standby = new Child(ctx.harness, ctx.url, 'leaderLease', args);
        spawned.push({ child: standby, key });
        await standby.next('campaigning');
        await ctx.backdoor.waitFor(
          'the standby waiting',
          async () => (await ctx.backdoor.waitersOn(key)).length === 1,
          await standby.budget(10_000),
        );
        return { table, key, leading, standby, term: Number(first.term) };
      }

      function report(fault: string, ms: number): number {
        console.info(`[${ctx.harness.name}] PostgreSQL ${major}: ${fault} → standby elected in ${ms} ms`);
        return ms;
      }

      it('leader SIGKILLed: the standby is elected within 1 s', async () => {
        const { leading, standby, term } = await leaderAndStandby('lease-sigkill');
        const killedAt = Date.now();
        leading.kill('SIGKILL');
        const elected = await standby.next('elected');
        expect(Number(elected.term)).toBeGreaterThan(term);
        expect(report('SIGKILL', Number(elected.at) - killedAt)).toBeLessThanOrEqual(1_000);
        expect(await standby.next('fenced')).toMatchObject({ rows: 1 });
      });

      it('leader frozen (SIGSTOP): the standby is elected within leaseMs + 1 s; woken, its signal aborts at once with LockLostError and its fenced write is refused', async () => {
        const { table, leading, standby, term } = await leaderAndStandby('lease-sigstop');
        const stoppedAt = Date.now();
        leading.kill('SIGSTOP');
        const elected = await standby.next('elected', LEASE_MS);
        expect(Number(elected.term)).toBeGreaterThan(term);
        expect(report(`SIGSTOP (leaseMs ${LEASE_MS})`, Number(elected.at) - stoppedAt)).toBeLessThanOrEqual(
          LEASE_MS + FAILOVER_SLACK_MS,
        );
        expect(await standby.next('fenced')).toMatchObject({ rows: 1 });
        // Frozen, the old leader said nothing: it learns on waking.
        expect(leading.events.filter((e) => e.event === 'lost')).toEqual([]);
        const wokenAt = Date.now();
        leading.kill('SIGCONT');
        const lost = await leading.next('lost');
        const afterWake = Number(lost.at) - wokenAt;
        console.info(
          `[${ctx.harness.name}] PostgreSQL ${major}: SIGCONT → old leader's signal aborted in ${afterWake} ms`,
        );
        expect(lost).toMatchObject({ term, code: 'LOCK_LOST', name: 'LockLostError', isLeader: false });
        expect(afterWake).toBeLessThan(FAILOVER_SLACK_MS);
        // Its write with the old term changes nothing: the new leader's term is higher.
        expect(await leading.next('refused')).toMatchObject({ term, rows: 0 });
        const [row] = await ctx.backdoor.query(`SELECT term::int, writer FROM ${table}_rows WHERE id = 1`);
        expect(row).toEqual({ term: Number(elected.term), writer: standby.process.pid });
      });

      it('leader cut off silently (a proxy that stops forwarding): its signal aborts first, and the standby is elected within leaseMs + 1 s', async () => {
        const proxy = await startTcpProxy(ctx.url);
        try {
          const { leading, standby, term } = await leaderAndStandby('lease-cut', proxy.url);
          const cutAt = Date.now();
          proxy.cut();
          const elected = await standby.next('elected', LEASE_MS);
          expect(Number(elected.term)).toBeGreaterThan(term);
          expect(report(`silent cut (leaseMs ${LEASE_MS})`, Number(elected.at) - cutAt)).toBeLessThanOrEqual(
            LEASE_MS + FAILOVER_SLACK_MS,
          );
          const lost = await leading.next('lost');
          console.info(
            `[${ctx.harness.name}] PostgreSQL ${major}: silent cut → old leader's signal aborted in ${Number(lost.at) - cutAt} ms`,
          );
          expect(lost).toMatchObject({ term, code: 'LOCK_LOST', isLeader: false });
          // Its process ran throughout: its term ended no later than the standby's began.
          expect(Number(lost.at)).toBeLessThanOrEqual(Number(elected.at));
        } finally {
          await proxy.close();
        }
      });
    },
  );
}
