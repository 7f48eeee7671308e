// The Drizzle instance: drizzle-orm/node-postgres through @pglock/drizzle.
import { advisoryLocks } from '@pglock/drizzle';
import { desc, eq, sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import { integer, pgTable, serial, text, timestamp } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { type OpenAdapter, poolConfig, sleep } from './demo-adapter.ts';

// Unqualified tables: the pool's search_path points at the run's schema.
const users = pgTable('users', {
  id: integer().primaryKey(),
  name: text().notNull(),
  score: integer().notNull(),
});
const scoreEvents = pgTable('score_events', {
  id: serial().primaryKey(),
  userId: integer('user_id').notNull(),
  instance: text().notNull(),
  points: integer().notNull(),
});
const rebuilds = pgTable('rebuilds', {
  id: serial().primaryKey(),
  instance: text().notNull(),
  startedAt: timestamp('started_at', { withTimezone: true }).notNull(),
  finishedAt: timestamp('finished_at', { withTimezone: true }),
  users: integer(),
});
const leaderboard = pgTable('leaderboard', {
  rebuildId: integer('rebuild_id').notNull(),
  rank: integer().notNull(),
  userId: integer('user_id').notNull(),
  score: integer().notNull(),
});

const digests = pgTable('digests', {
  id: serial().primaryKey(),
  instance: text().notNull(),
  periodStart: timestamp('period_start', { withTimezone: true }).notNull(),
  periodEnd: timestamp('period_end', { withTimezone: true }).notNull(),
});

export const open: OpenAdapter = async (config) => {
  const pool = new pg.Pool(poolConfig(config));
  const db = drizzle({ client: pool });
  const locks = advisoryLocks(db, { namespace: config.namespace });
  await db.select().from(users).limit(1);
  return {
    async rebuild(lockName, onHeld, timeoutMs) {
      const result = await locks.tryWithLock(
        lockName,
        async (tx) => {
          // Timestamps from the server's clock, so the overlap check compares like with like.
          const [started] = await tx
            .insert(rebuilds)
            .values({ instance: config.label, startedAt: sql`clock_timestamp()` })
            .returning({ id: rebuilds.id });
          const id = started!.id;
          onHeld(id);
          const ranked = await tx.select().from(users).orderBy(desc(users.score), users.id);
          await tx.delete(leaderboard);
          await sleep(config.rebuildHoldMs);
          if (ranked.length > 0) {
            await tx
              .insert(leaderboard)
              .values(ranked.map((u, i) => ({ rebuildId: id, rank: i + 1, userId: u.id, score: u.score })));
          }
          await tx
            .update(rebuilds)
            .set({ finishedAt: sql`clock_timestamp()`, users: ranked.length })
            .where(eq(rebuilds.id, id));
        },
        { timeoutMs },
      );
      return result.acquired;
    },
    async digest(lockName, cron) {
      const result = await locks.runOnce(lockName, { cron }, async (tx, { period }) => {
        await tx
          .insert(digests)
          .values({ instance: config.label, periodStart: period.start, periodEnd: period.end });
      });
      return result.ran ? 'ran' : result.reason;
    },
    leader: (name, options) => locks.leader(name, options),
    pool,
    async addPoint(lockName, userId) {
      await locks.withLock(lockName, async (tx) => {
        const [user] = await tx.select({ score: users.score }).from(users).where(eq(users.id, userId));
        await sleep(config.thinkMs);
        await tx
          .update(users)
          .set({ score: user!.score + 1 })
          .where(eq(users.id, userId));
        await tx.insert(scoreEvents).values({ userId, instance: config.label, points: 1 });
      });
    },
    close: () => pool.end(),
  };
};
