import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DevDatabase } from '../src/dev-database.ts';
import { runScheduler } from '../src/main.ts';
import { testDatabase } from './database.ts';

let database: DevDatabase;
beforeAll(async () => {
  database = await testDatabase();
});
afterAll(() => database?.stop());

it('4 workers: each job runs exactly once per tick, balances add up, one migration, no deadlock', async () => {
  const summary = await runScheduler(database.url, 4, 6, 250);
  expect(summary.runsPerJobTick).toEqual(Array.from({ length: summary.expectedJobTicks }, () => 1));
  expect(summary.expectedJobTicks).toBe(3 * 6);
  expect(summary.totalBalance.after).toBe(summary.totalBalance.before);
  expect(summary.migrationsApplied).toBe(1);
  expect(summary.workers.reduce((n, w) => n + w.transfers, 0)).toBe(4 * 6 * 5);
  // The try-lock did its job: some worker found a job taken or already run in some tick.
  expect(summary.workers.reduce((n, w) => n + w.skipped, 0)).toBeGreaterThan(0);
  expect(summary.ok).toBe(true);
});
