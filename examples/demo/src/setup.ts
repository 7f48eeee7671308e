import type pg from 'pg';

/**
 * Creates the run's schema: users with a score, the ledger of committed score updates, one row per
 * committed rebuild (server timestamps) and the leaderboard the rebuilds replace.
 */
export async function createSchema(admin: pg.Client, schema: string, users: number): Promise<void> {
  await admin.query(`
    CREATE SCHEMA ${schema};
    CREATE TABLE ${schema}.users (id int PRIMARY KEY, name text NOT NULL, score int NOT NULL DEFAULT 0);
    CREATE TABLE ${schema}.score_events (
      id serial PRIMARY KEY, user_id int NOT NULL, instance text NOT NULL, points int NOT NULL,
      at timestamptz NOT NULL DEFAULT clock_timestamp());
    CREATE TABLE ${schema}.rebuilds (
      id serial PRIMARY KEY, instance text NOT NULL,
      started_at timestamptz NOT NULL DEFAULT clock_timestamp(), finished_at timestamptz, users int);
    CREATE TABLE ${schema}.leaderboard (
      rebuild_id int NOT NULL, rank int NOT NULL, user_id int NOT NULL, score int NOT NULL,
      PRIMARY KEY (rebuild_id, rank));
  `);
  await admin.query(
    `INSERT INTO ${schema}.users (id, name) SELECT i, 'user ' || i FROM generate_series(1, $1::int) AS i`,
    [users],
  );
}
