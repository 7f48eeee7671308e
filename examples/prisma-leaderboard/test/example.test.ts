import { expect, inject, it } from 'vitest';
import { runLeaderboardDemo } from '../src/leaderboard-demo.ts';

it('three instances: no lost score update, rebuilds never overlap, busy rebuilds are skipped', async () => {
  const summary = await runLeaderboardDemo(inject('databaseUrl'));
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
