import type pg from 'pg';
import { describe, expectTypeOf, it } from 'vitest';
import {
  advisoryLocks,
  currentLeader,
  type LeaderCampaign,
  type LeaderInfo,
  type LeaderObserver,
  leader,
  observeLeader,
  type RunOnceOptions,
  type RunOncePeriod,
  type RunOnceReasonOf,
  type RunOnceResult,
  runOnce,
} from '../src/index.ts';

declare const pool: pg.Pool;

describe('scheduling types', () => {
  it('runOnce gives the job the pool client and its period; the result narrows on ran', async () => {
    const result = await runOnce(
      pool,
      'report',
      { per: '1h' },
      async (client, { period, missed, signal, attempt }) => {
        expectTypeOf(client).toEqualTypeOf<pg.PoolClient>();
        expectTypeOf(period).toEqualTypeOf<RunOncePeriod>();
        expectTypeOf(missed).toEqualTypeOf<number>();
        expectTypeOf(signal).toEqualTypeOf<AbortSignal>();
        expectTypeOf(attempt).toEqualTypeOf<number>();
        return 42;
      },
    );
    expectTypeOf(result).toEqualTypeOf<RunOnceResult<number>>();
    if (result.ran) expectTypeOf(result.value).toEqualTypeOf<number>();
    else if (result.reason === 'failed') expectTypeOf(result.attempts).toEqualTypeOf<number>();
    else expectTypeOf(result.reason).toEqualTypeOf<'done' | 'busy' | 'too-soon'>();
    expectTypeOf(result.period.start).toEqualTypeOf<Date>();
  });

  it('per is milliseconds or a duration string; the transaction settings are pg’s', () => {
    const job = async () => undefined;
    runOnce(pool, 'a', { per: 1_000 }, job);
    runOnce(pool, 'a', { per: '15m', timeoutMs: 500, transaction: { isolationLevel: 'serializable' } }, job);
    // @ts-expect-error a unit pglock does not know
    runOnce(pool, 'a', { per: '1w' }, job);
    // @ts-expect-error per is required
    runOnce(pool, 'a', {}, job);
    // @ts-expect-error Prisma's transaction timeout does not exist on node-postgres
    runOnce(pool, 'a', { per: '1h', transaction: { timeout: 10_000 } }, job);
    runOnce(pool, 'a', { per: '1h', maxRunMs: 60_000, retry: { limit: 3, delayMs: 1_000 } }, job);
    runOnce(pool, 'a', { per: '1h', retry: { limit: 0 } }, job);
    // @ts-expect-error retry needs its limit
    runOnce(pool, 'a', { per: '1h', retry: { delayMs: 1_000 } }, job);
    // @ts-expect-error maxRunMs is milliseconds, not a duration string
    runOnce(pool, 'a', { per: '1h', maxRunMs: '1m' }, job);
  });

  it("'too-soon' ('failed') is in the result's type only for a call that may carry minIntervalMs (retry)", async () => {
    const locks = advisoryLocks(pool);
    const plain = await locks.runOnce('a', { per: '1h' }, async () => 1);
    if (!plain.ran) expectTypeOf(plain.reason).toEqualTypeOf<'done' | 'busy'>();
    const spaced = await locks.runOnce('a', { cron: '0 * * * *', minIntervalMs: 5_000 }, async () => 1);
    if (!spaced.ran) expectTypeOf(spaced.reason).toEqualTypeOf<'done' | 'busy' | 'too-soon' | 'failed'>();
    const options: RunOnceOptions = { per: '1h' };
    const typed = await locks.runOnce('a', options, async () => 1);
    if (!typed.ran) expectTypeOf(typed.reason).toEqualTypeOf<'done' | 'busy' | 'too-soon' | 'failed'>();
    const retried = await locks.runOnce('a', { per: '1h', retry: { limit: 2 } }, async () => 1);
    if (!retried.ran) expectTypeOf(retried.reason).toEqualTypeOf<'done' | 'busy' | 'too-soon' | 'failed'>();
    if (!retried.ran && retried.reason === 'failed') expectTypeOf(retried.attempts).toEqualTypeOf<number>();
    expectTypeOf<RunOnceReasonOf<{ per: '1h' }>>().toEqualTypeOf<'done' | 'busy'>();
    expectTypeOf<RunOnceReasonOf<RunOnceOptions>>().toEqualTypeOf<'done' | 'busy' | 'too-soon' | 'failed'>();
  });

  it('cron with an optional timeZone instead of per (never both); minIntervalMs and catchUp', () => {
    const job = async () => undefined;
    runOnce(pool, 'a', { cron: '0 3 * * *', timeZone: 'Europe/Berlin', catchUp: 'last' }, job);
    runOnce(pool, 'a', { cron: '0,30 * * * * *', minIntervalMs: 5_000, timeoutMs: 500 }, job);
    runOnce(pool, 'a', { per: '1h', minIntervalMs: 90 * 60_000, catchUp: 'none' }, job);
    // @ts-expect-error per and cron are two schedules
    runOnce(pool, 'a', { per: '1h', cron: '0 * * * *' }, job);
    // @ts-expect-error timeZone goes with cron
    runOnce(pool, 'a', { per: '1h', timeZone: 'UTC' }, job);
    // @ts-expect-error catchUp is 'none' or 'last'
    runOnce(pool, 'a', { cron: '0 * * * *', catchUp: 'all' }, job);
  });

  it('leader takes a pool and gives a campaign; onElected gets the term and the signal', () => {
    const campaign = leader(pool, 'scheduler', {
      onElected: ({ term, signal }) => {
        expectTypeOf(term).toEqualTypeOf<number>();
        expectTypeOf(signal).toEqualTypeOf<AbortSignal>();
      },
    });
    expectTypeOf(campaign).toEqualTypeOf<LeaderCampaign>();
    expectTypeOf(campaign.term).toEqualTypeOf<number | undefined>();
    expectTypeOf(campaign.stop()).toEqualTypeOf<Promise<void>>();
    expectTypeOf(advisoryLocks(pool).leader).toBeFunction();
    // @ts-expect-error onElected is required
    leader(pool, 'scheduler', {});
  });

  it('identity is a string; resign() resolves nothing; currentLeader and observeLeader give the leader or undefined', async () => {
    const campaign = leader(pool, 'scheduler', {
      identity: 'https://a.internal',
      onElected: () => undefined,
    });
    expectTypeOf(campaign.identity).toEqualTypeOf<string>();
    expectTypeOf(campaign.resign()).toEqualTypeOf<Promise<void>>();
    // @ts-expect-error identity is a string
    leader(pool, 'scheduler', { identity: 42, onElected: () => undefined });

    const now = await currentLeader(pool, 'scheduler', { namespace: 'billing' });
    expectTypeOf(now).toEqualTypeOf<LeaderInfo | undefined>();
    if (now) {
      expectTypeOf(now.term).toEqualTypeOf<number>();
      expectTypeOf(now.since).toEqualTypeOf<Date>();
      expectTypeOf(now.identity).toEqualTypeOf<string | undefined>();
      expectTypeOf(now.pid).toEqualTypeOf<number>();
    }
    const observer = observeLeader(pool, 'scheduler', {
      onChange: (leader, previous) => {
        expectTypeOf(leader).toEqualTypeOf<LeaderInfo | undefined>();
        expectTypeOf(previous).toEqualTypeOf<LeaderInfo | undefined>();
      },
    });
    expectTypeOf(observer).toEqualTypeOf<LeaderObserver>();
    expectTypeOf(observer.stop()).toEqualTypeOf<Promise<void>>();
    expectTypeOf(advisoryLocks(pool).currentLeader).toBeFunction();
    // @ts-expect-error onChange is required
    observeLeader(pool, 'scheduler', {});
  });
});
