import { expect, inject, it } from 'vitest';
import { runChaos } from '../src/chaos.ts';
import { formatChaos, unexpectedCrashes } from '../src/chaos-report.ts';
import { subjects } from '../src/subjects.ts';

// The bounded CI run of `pnpm chaos`: every adapter in worker processes, straight to PostgreSQL and
// through PgBouncer in transaction mode, with leader-style session locks, runOnce jobs and leader
// campaigns where the adapter has them;
// SIGKILLs, SIGSTOP freezes (0.3–1.5 s) and backend terminations for CHAOS_SECONDS (default 20 s), then the history check.
const seconds = Number(process.env.CHAOS_SECONDS ?? 20);
const pgbouncer = inject('pgbouncer');

it(`chaos: ${seconds} s of kills, freezes and terminations across every adapter leave a valid history`, {
  timeout: 240_000,
}, async () => {
  const result = await runChaos({ url: inject('databaseUrl'), seconds, processes: subjects.length });
  console.log(formatChaos(result));
  expect(result.violations).toEqual([]);
  expect(result.hungAdapters).toEqual([]);
  expect(unexpectedCrashes(result)).toEqual([]);
  // The run must have done something worth checking, under faults that really happened.
  expect(result.exclusive).toBeGreaterThan(20);
  expect(result.shared).toBeGreaterThan(0);
  expect(result.session).toBeGreaterThan(0);
  expect(result.sessionHeld).toBeGreaterThan(0);
  expect(result.kills + result.terminations).toBeGreaterThanOrEqual(seconds / 2);
  expect(result.freezes).toBeGreaterThan(0);
  // runOnce and leader ran too, and their checks had rows to check (violations above covers them).
  expect(result.jobsRan).toBeGreaterThan(0);
  expect(result.jobsDone + result.jobsBusy).toBeGreaterThan(0);
  expect(result.schedules.jobRuns).toBeGreaterThan(0);
  expect(result.schedules.elections).toBeGreaterThan(1);
  expect(result.schedules.verifiedTicks).toBeGreaterThan(0);
  expect(result.schedules.fencedWrites).toBeGreaterThan(0);
  if ('transactionUrl' in pgbouncer) {
    expect(result.pooler).toEqual({ processes: subjects.length });
    expect(result.sessionRefused).toBeGreaterThan(0);
    expect(result.leaderRefused).toBeGreaterThan(0);
  }
  // Every adapter got sections through (a postgres.js worker that crashes often may miss in one lane).
  for (const subject of subjects) {
    const sections =
      (result.byAdapter[subject.name] ?? 0) + (result.byAdapter[`${subject.name} via pgbouncer`] ?? 0);
    expect(sections, subject.name).toBeGreaterThan(0);
  }
  if ('processes' in result.pooler) {
    const pooled = Object.entries(result.byAdapter).filter(([name]) => name.endsWith(' via pgbouncer'));
    expect(pooled.reduce((sum, [, n]) => sum + n, 0)).toBeGreaterThan(0);
  }
});
