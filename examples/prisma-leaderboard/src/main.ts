// Starts three app instances that share one leaderboard. With DATABASE_URL unset it runs against an
// embedded PostgreSQL started (and removed) for this run.
import { devDatabase } from './dev-database.ts';
import { runLeaderboardDemo } from './leaderboard-demo.ts';

const database = await devDatabase();
try {
  const summary = await runLeaderboardDemo(database.url, {
    log: (line) => console.log(line),
  });
  console.log('');
  for (const s of summary.instances) {
    console.log(
      `instance ${s.instance}: ${s.updates} score updates, ${s.rebuilds} rebuilds, ${s.skipped} skipped (busy)`,
    );
  }
  console.log(
    `scores add up to ${summary.totalScore} for ${summary.totalUpdates} updates (${summary.totalScore === summary.totalUpdates ? 'none lost' : 'LOST UPDATES'}); ` +
      `${summary.overlappingRebuilds} overlapping rebuilds`,
  );
  console.log('top 3:', summary.top.map((r) => `#${r.rank} player ${r.playerId} (${r.score})`).join(', '));
} finally {
  await database.stop();
}
