import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { generateClient } from './generate-client.ts';

/** What the instances reported, and what the database says afterwards. */
export interface DemoSummary {
  readonly instances: readonly { instance: string; updates: number; rebuilds: number; skipped: number }[];
  /** Sum of all players' scores: equals the number of updates when none was lost. */
  readonly totalScore: number;
  readonly totalUpdates: number;
  /** Rebuilds whose time ranges overlap another's (0 when the lock excluded them). */
  readonly overlappingRebuilds: number;
  readonly top: readonly { rank: number; playerId: number; score: number }[];
}

const instanceFile = fileURLToPath(new URL('./instance.ts', import.meta.url));

/**
 * Creates the tables, starts `instances` app processes against `url`, waits for them, and checks the
 * outcome. `log` receives every line the processes print.
 */
export async function runLeaderboardDemo(
  url: string,
  {
    instances = 3,
    updates = 30,
    players = 4,
    log = (_line: string): void => undefined,
  }: { instances?: number; updates?: number; players?: number; log?: (line: string) => void } = {},
): Promise<DemoSummary> {
  await generateClient();
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    await db.query(`DROP TABLE IF EXISTS prisma_leaderboard_players, prisma_leaderboard_rankings, prisma_leaderboard_rebuilds;
      CREATE TABLE prisma_leaderboard_players (id int PRIMARY KEY, name text NOT NULL, score int NOT NULL);
      CREATE TABLE prisma_leaderboard_rankings (rank int PRIMARY KEY, player_id int NOT NULL, score int NOT NULL);
      CREATE TABLE prisma_leaderboard_rebuilds (id serial PRIMARY KEY, instance text NOT NULL,
        started_at timestamptz(3) NOT NULL, finished_at timestamptz(3) NOT NULL);
      INSERT INTO prisma_leaderboard_players SELECT i, 'player ' || i, 0 FROM generate_series(1, ${players}) AS i;`);

    const names = Array.from({ length: instances }, (_, i) => String.fromCharCode(65 + i));
    const summaries = await Promise.all(names.map((name) => runInstance(url, name, updates, players, log)));

    const [total] = (
      await db.query('SELECT coalesce(sum(score), 0)::int AS n FROM prisma_leaderboard_players')
    ).rows;
    const [overlaps] = (
      await db.query(`SELECT count(*)::int AS n FROM prisma_leaderboard_rebuilds a JOIN prisma_leaderboard_rebuilds b
        ON a.id < b.id AND a.started_at < b.finished_at AND b.started_at < a.finished_at`)
    ).rows;
    const top = (
      await db.query(
        'SELECT rank, player_id AS "playerId", score FROM prisma_leaderboard_rankings ORDER BY rank LIMIT 3',
      )
    ).rows;
    return {
      instances: summaries,
      totalScore: total.n,
      totalUpdates: summaries.reduce((sum, s) => sum + s.updates, 0),
      overlappingRebuilds: overlaps.n,
      top,
    };
  } finally {
    await db.end();
  }
}

function runInstance(
  url: string,
  name: string,
  updates: number,
  players: number,
  log: (line: string) => void,
): Promise<DemoSummary['instances'][number]> {
  // tsx runs the TypeScript; NODE_OPTIONS (and with it any --conditions) passes on to the instance.
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', instanceFile, url, name, String(updates), String(players)],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += String(chunk);
  });
  let summary: DemoSummary['instances'][number] | undefined;
  createInterface({ input: child.stdout }).on('line', (line) => {
    if (line.startsWith('{')) summary = (JSON.parse(line) as { summary: typeof summary }).summary;
    else log(line);
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => {
      if (code === 0 && summary) resolve(summary);
      else reject(new Error(`instance ${name} exited with ${code}:\n${stderr}`));
    });
  });
}
