import type pg from 'pg';
import { describe, expectTypeOf, it } from 'vitest';
import {
  advisoryLocks,
  type LeaderCampaign,
  leader,
  type RunOncePeriod,
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
      async (client, { period, signal, attempt }) => {
        expectTypeOf(client).toEqualTypeOf<pg.PoolClient>();
        expectTypeOf(period).toEqualTypeOf<RunOncePeriod>();
        expectTypeOf(signal).toEqualTypeOf<AbortSignal>();
        expectTypeOf(attempt).toEqualTypeOf<number>();
        return 42;
      },
    );
    expectTypeOf(result).toEqualTypeOf<RunOnceResult<number>>();
    if (result.ran) expectTypeOf(result.value).toEqualTypeOf<number>();
    else if (result.reason === 'failed') expectTypeOf(result.attempts).toEqualTypeOf<number>();
    else expectTypeOf(result.reason).toEqualTypeOf<'done' | 'busy'>();
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
});
