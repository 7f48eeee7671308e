import { JOBS_TABLE_DDL } from '@pglock/pg';
import type pg from 'pg';

/**
 * Creates the run's schema: users with a score, the ledger of committed score updates, one row per
 * committed rebuild (server timestamps) and the leaderboard the rebuilds replace; for the scheduling
 * jobs, pglock's own `pglock_jobs`, one row per committed digest run, one per leader term, and the
 * state the leader's scheduler writes under its fencing term.
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
    -- tx_started_at (now()) is before the run's claim and ran_at (clock_timestamp()) after it: the claim's
    -- server time lies between them, whatever the adapter.
    CREATE TABLE ${schema}.digests (
      id serial PRIMARY KEY, instance text NOT NULL,
      period_start timestamptz NOT NULL, period_end timestamptz NOT NULL,
      tx_started_at timestamptz NOT NULL DEFAULT now(), ran_at timestamptz NOT NULL DEFAULT clock_timestamp());
    CREATE TABLE ${schema}.leader_terms (
      term bigint NOT NULL, instance text NOT NULL, elected_at timestamptz,
      noticed_at timestamptz NOT NULL DEFAULT clock_timestamp(), last_tick_at timestamptz,
      ticks int NOT NULL DEFAULT 0, PRIMARY KEY (term, instance));
    CREATE TABLE ${schema}.scheduler_state (
      id int PRIMARY KEY, term bigint NOT NULL, instance text, ticks int NOT NULL DEFAULT 0, ticked_at timestamptz);
    INSERT INTO ${schema}.scheduler_state (id, term) VALUES (1, 0);
  `);
  // pglock finds its table through the search_path, which every instance's pool sets to the schema.
  await admin.query(`BEGIN; SET LOCAL search_path TO ${schema}; ${JOBS_TABLE_DDL} COMMIT;`);
  await admin.query(
    `INSERT INTO ${schema}.users (id, name) SELECT i, 'user ' || i FROM generate_series(1, $1::int) AS i`,
    [users],
  );
}
