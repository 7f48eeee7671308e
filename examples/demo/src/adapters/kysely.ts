// The Kysely instance: Kysely's PostgresDialect on a pg.Pool through @pglock/kysely.
import { advisoryLocks } from '@pglock/kysely';
import { type Generated, Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { type OpenAdapter, poolConfig, sleep } from './demo-adapter.ts';

interface Database {
  users: { id: number; name: string; score: number };
  score_events: { id: Generated<number>; user_id: number; instance: string; points: number };
  rebuilds: {
    id: Generated<number>;
    instance: string;
    started_at: Generated<Date>;
    finished_at: Date | null;
    users: number | null;
  };
  leaderboard: { rebuild_id: number; rank: number; user_id: number; score: number };
  digests: {
    id: Generated<number>;
    instance: string;
    period_start: Date;
    period_end: Date;
    tx_started_at: Generated<Date>;
    ran_at: Generated<Date>;
  };
}

export const open: OpenAdapter = async (config) => {
  const pool = new pg.Pool(poolConfig(config));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  const locks = advisoryLocks(db, { namespace: config.namespace });
  await db.selectFrom('users').select('id').limit(1).execute();
  return {
    async rebuild(lockName, onHeld, timeoutMs) {
      const result = await locks.tryWithLock(
        lockName,
        async (trx) => {
          const { id } = await trx
            .insertInto('rebuilds')
            .values({ instance: config.label, finished_at: null, users: null })
            .returning('id')
            .executeTakeFirstOrThrow();
          onHeld(id);
          const ranked = await trx
            .selectFrom('users')
            .select(['id', 'score'])
            .orderBy('score', 'desc')
            .orderBy('id')
            .execute();
          await trx.deleteFrom('leaderboard').execute();
          await sleep(config.rebuildHoldMs);
          if (ranked.length > 0) {
            await trx
              .insertInto('leaderboard')
              .values(ranked.map((u, i) => ({ rebuild_id: id, rank: i + 1, user_id: u.id, score: u.score })))
              .execute();
          }
          await trx
            .updateTable('rebuilds')
            .set({ finished_at: sql<Date>`clock_timestamp()`, users: ranked.length })
            .where('id', '=', id)
            .execute();
        },
        { timeoutMs },
      );
      return result.acquired;
    },
    async digest(lockName, cron) {
      const result = await locks.runOnce(lockName, { cron }, async (trx, { period }) => {
        await trx
          .insertInto('digests')
          .values({ instance: config.label, period_start: period.start, period_end: period.end })
          .execute();
      });
      return result.ran ? 'ran' : result.reason;
    },
    leader: (name, options) => locks.leader(name, options),
    pool,
    async addPoint(lockName, userId) {
      await locks.withLock(lockName, async (trx) => {
        const user = await trx
          .selectFrom('users')
          .select('score')
          .where('id', '=', userId)
          .executeTakeFirstOrThrow();
        await sleep(config.thinkMs);
        await trx
          .updateTable('users')
          .set({ score: user.score + 1 })
          .where('id', '=', userId)
          .execute();
        await trx
          .insertInto('score_events')
          .values({ user_id: userId, instance: config.label, points: 1 })
          .execute();
      });
    },
    close: () => db.destroy(),
  };
};
