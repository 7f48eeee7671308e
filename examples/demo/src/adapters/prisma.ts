// The Prisma instance: a generated client on @prisma/adapter-pg, extended with @pglock/prisma.
import { advisoryLocks as pgAdvisoryLocks } from '@pglock/pg';
import { advisoryLocks } from '@pglock/prisma';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient } from '../generated/client.ts';
import { type OpenAdapter, poolConfig, sleep } from './demo-adapter.ts';

export const open: OpenAdapter = async (config) => {
  // Prisma qualifies every table with a schema name; `schema` makes it the run's schema.
  const pool = new pg.Pool(poolConfig(config));
  const prisma = new PrismaClient({
    adapter: new PrismaPg(pool, { schema: config.schema }),
  }).$extends(advisoryLocks({ namespace: config.namespace }));
  // A leader holds a connection for its whole term, which only the pg.Pool under Prisma can give.
  const sessionLocks = pgAdvisoryLocks(pool, { namespace: config.namespace });
  await prisma.$transaction(async (tx) => tx.user.findFirst());
  return {
    async rebuild(lockName, onHeld, timeoutMs) {
      const result = await prisma.$tryWithLock(
        lockName,
        async (tx) => {
          // started_at defaults to clock_timestamp(): the server's clock, like finished_at below.
          const { id } = await tx.rebuild.create({ data: { instance: config.label }, select: { id: true } });
          onHeld(id);
          const ranked = await tx.user.findMany({ orderBy: [{ score: 'desc' }, { id: 'asc' }] });
          await tx.leaderboardRow.deleteMany();
          await sleep(config.rebuildHoldMs);
          await tx.leaderboardRow.createMany({
            data: ranked.map((u, i) => ({ rebuildId: id, rank: i + 1, userId: u.id, score: u.score })),
          });
          await tx.$executeRaw`UPDATE rebuilds SET finished_at = clock_timestamp(), users = ${ranked.length} WHERE id = ${id}`;
        },
        { timeoutMs },
      );
      return result.acquired;
    },
    async digest(lockName, cron) {
      const result = await prisma.$runOnce(lockName, { cron }, async (tx, { period }) => {
        await tx.digest.create({
          data: { instance: config.label, periodStart: period.start, periodEnd: period.end },
        });
      });
      return result.ran ? 'ran' : result.reason;
    },
    leader: (name, options) => sessionLocks.leader(name, options),
    pool,
    async addPoint(lockName, userId) {
      await prisma.$withLock(lockName, async (tx) => {
        const user = await tx.user.findUniqueOrThrow({ where: { id: userId }, select: { score: true } });
        await sleep(config.thinkMs);
        await tx.user.update({ where: { id: userId }, data: { score: user.score + 1 } });
        await tx.scoreEvent.create({ data: { userId, instance: config.label, points: 1 } });
      });
    },
    async close() {
      await prisma.$disconnect();
      await pool.end().catch(() => undefined);
    },
  };
};
