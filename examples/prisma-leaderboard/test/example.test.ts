import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DevDatabase } from '../src/dev-database.ts';
import { runLeaderboardDemo } from '../src/leaderboard-demo.ts';
import { testDatabase } from './database.ts';

let database: DevDatabase;
beforeAll(async () => {
  database = await testDatabase();
});
afterAll(() => database?.stop());

it('three instances: no lost score update, rebuilds never overlap, busy rebuilds are skipped', async () => {
  const summary = await runLeaderboardDemo(database.url);
  expect(summary.instances).toHaveLength(3);
  expect(summary.totalUpdates).toBe(90);
  expect(summary.totalScore).toBe(summary.totalUpdates);
  expect(summary.overlappingRebuilds).toBe(0);
  const rebuilds = summary.instances.reduce((n, s) => n + s.rebuilds, 0);
  const skipped = summary.instances.reduce((n, s) => n + s.skipped, 0);
  expect(rebuilds).toBeGreaterThan(0);
  expect(skipped).toBeGreaterThan(0);
  expect(summary.top[0]?.rank).toBe(1);
});
