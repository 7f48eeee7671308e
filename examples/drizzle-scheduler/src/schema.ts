import { integer, pgTable, text } from 'drizzle-orm/pg-core';

/** Jobs to run once per tick; `last_tick` makes a late worker skip a tick that already ran. */
export const jobs = pgTable('jobs', {
  name: text('name').primaryKey(),
  lastTick: integer('last_tick').notNull(),
});

/** One row per job run: the summary checks there is exactly one per job and tick. */
export const jobRuns = pgTable('job_runs', {
  job: text('job').notNull(),
  tick: integer('tick').notNull(),
  worker: text('worker').notNull(),
});

export const accounts = pgTable('accounts', {
  id: integer('id').primaryKey(),
  balance: integer('balance').notNull(),
});

export const schema = { jobs, jobRuns, accounts };
