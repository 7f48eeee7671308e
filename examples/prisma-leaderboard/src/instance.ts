// One app instance (a process of its own). Rebuilds the leaderboard on a timer, skipping when another
// instance is at it, and applies score updates one at a time per user. Prints one line per event and
// a JSON summary line at the end.

import { advisoryLocks } from '@pglock/prisma';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from './generated/client.ts';

const [url, instance = 'A', updatesArg = '30', playersArg = '4'] = process.argv.slice(2);
const updates = Number(updatesArg);
const players = Number(playersArg);
const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: url, max: 4 }) }).$extends(
  advisoryLocks({ namespace: 'prisma-leaderboard' }),
);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const say = (line: string) => console.log(`[${instance}] ${line}`);
const stats = { instance, updates: 0, rebuilds: 0, skipped: 0 };

/** Rebuilds the rankings table from the players' scores; slow on purpose, like a real one. */
async function rebuildOnce(): Promise<void> {
  const result = await prisma.$tryWithLock('leaderboard:rebuild', async (tx) => {
    const startedAt = new Date();
    const ranked = await tx.player.findMany({ orderBy: [{ score: 'desc' }, { id: 'asc' }] });
    await tx.ranking.deleteMany();
    await sleep(120);
    await tx.ranking.createMany({
      data: ranked.map((player, i) => ({ rank: i + 1, playerId: player.id, score: player.score })),
    });
    await tx.rebuild.create({ data: { instance, startedAt, finishedAt: new Date() } });
    return ranked[0];
  });
  if (result.acquired) {
    stats.rebuilds++;
    say(`rebuilt the leaderboard (leader: player ${result.value?.id} with ${result.value?.score})`);
  } else {
    stats.skipped++;
    say('skipped the rebuild: another instance is rebuilding');
  }
}

/** Adds points to a user: read, compute, write. Without the per-user lock two instances would lose updates. */
async function addPoints(id: number, points: number): Promise<void> {
  await prisma.$withLock(`user:${id}`, async (tx) => {
    const player = await tx.player.findUniqueOrThrow({ where: { id } });
    await sleep(3);
    await tx.player.update({ where: { id }, data: { score: player.score + points } });
  });
  stats.updates++;
}

let scoring = true;
const rebuilding = (async () => {
  while (scoring) {
    await rebuildOnce();
    await sleep(150);
  }
})();
for (let i = 0; i < updates; i++) await addPoints(1 + ((i * 7 + instance.charCodeAt(0)) % players), 1);
say(`applied ${stats.updates} score updates`);
scoring = false;
await rebuilding;
console.log(JSON.stringify({ summary: stats }));
await prisma.$disconnect();
