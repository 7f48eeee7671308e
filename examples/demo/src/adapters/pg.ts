// The node-postgres instance: plain SQL on a pg.Pool through @pglock/pg.
import { advisoryLocks } from '@pglock/pg';
import pg from 'pg';
import { type OpenAdapter, poolConfig, sleep } from './demo-adapter.ts';

export const open: OpenAdapter = async (config) => {
  const pool = new pg.Pool(poolConfig(config));
  const locks = advisoryLocks(pool, { namespace: config.namespace });
  await pool.query('SELECT count(*) FROM users');
  return {
    async rebuild(lockName, onHeld, timeoutMs) {
      const result = await locks.tryWithLock(
        lockName,
        async (client) => {
          const started = await client.query<{ id: number }>(
            'INSERT INTO rebuilds (instance) VALUES ($1) RETURNING id',
            [config.label],
          );
          const id = started.rows[0]!.id;
          onHeld(id);
          const ranked = await client.query<{ id: number; score: number }>(
            'SELECT id, score FROM users ORDER BY score DESC, id',
          );
          await client.query('DELETE FROM leaderboard');
          await sleep(config.rebuildHoldMs);
          await client.query(
            `INSERT INTO leaderboard (rebuild_id, rank, user_id, score)
           SELECT $1, r.rank, r.user_id, r.score
           FROM unnest($2::int[], $3::int[], $4::int[]) AS r(rank, user_id, score)`,
            [
              id,
              ranked.rows.map((_, i) => i + 1),
              ranked.rows.map((u) => u.id),
              ranked.rows.map((u) => u.score),
            ],
          );
          await client.query(
            'UPDATE rebuilds SET finished_at = clock_timestamp(), users = $2 WHERE id = $1',
            [id, ranked.rowCount],
          );
        },
        { timeoutMs },
      );
      return result.acquired;
    },
    async digest(lockName, cron) {
      const result = await locks.runOnce(lockName, { cron }, async (client, { period }) => {
        await client.query('INSERT INTO digests (instance, period_start, period_end) VALUES ($1, $2, $3)', [
          config.label,
          period.start,
          period.end,
        ]);
      });
      return result.ran ? 'ran' : result.reason;
    },
    leader: (name, options) => locks.leader(name, options),
    pool,
    async addPoint(lockName, userId) {
      await locks.withLock(lockName, async (client) => {
        const read = await client.query<{ score: number }>('SELECT score FROM users WHERE id = $1', [userId]);
        await sleep(config.thinkMs);
        await client.query('UPDATE users SET score = $2 WHERE id = $1', [userId, read.rows[0]!.score + 1]);
        await client.query('INSERT INTO score_events (user_id, instance, points) VALUES ($1, $2, 1)', [
          userId,
          config.label,
        ]);
      });
    },
    close: () => pool.end(),
  };
};
