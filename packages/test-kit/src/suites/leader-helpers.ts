import { JOBS_TABLE_DDL, type LeaderCampaign, type LeaderOptions } from '@pglock/core';
import { beforeAll } from 'vitest';
import { firstReason, missing, type SuiteContext } from '../context.ts';
import type { AdapterInstance } from '../harness.ts';

// What the suites of `leader` share: the adapter's verb, and pglock_jobs created once.

/** Serialises creating pglock_jobs with the other suites' set-up in parallel test files. */
export const JOBS_SETUP_KEY = '8120031911';

/** The adapter's `leader`, or an error when the harness has none. */
export function leaderOf(
  instance: AdapterInstance,
): (name: string, options: LeaderOptions) => LeaderCampaign {
  const start = instance.locks.leader;
  if (start === undefined) throw new Error('the adapter has no leader');
  return start;
}

/** Creates pglock_jobs before the suite's tests (once across parallel files: an advisory lock). */
export function useJobsTable(ctx: SuiteContext): void {
  beforeAll(async () => {
    await ctx.backdoor.query('SELECT pg_advisory_lock($1::bigint)', [JOBS_SETUP_KEY]);
    try {
      await ctx.backdoor.query(JOBS_TABLE_DDL);
    } finally {
      await ctx.backdoor.query('SELECT pg_advisory_unlock($1::bigint)', [JOBS_SETUP_KEY]);
    }
  });
}

/** Why a suite's leaders cannot run here (no session locks, or a transaction-mode pooler), or undefined. */
export function noLeaderReason(ctx: SuiteContext): string | undefined {
  return firstReason(
    missing(ctx.harness.capabilities, 'session', 'the adapter has no session locks, so no leader'),
    ctx.viaPooler
      ? 'a transaction-mode pooler cannot hold session locks (the scheduling suite checks the refusal)'
      : undefined,
  );
}
