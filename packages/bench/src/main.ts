// `pnpm bench` (full, a few minutes) and `pnpm bench -- --quick` (a smoke run, under a minute).
// Writes results/latest.md and one SVG chart per scenario; `--out DIR` writes them elsewhere.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { openDatabase } from './database.ts';
import { runHotKey } from './hot-key.ts';
import { load, machineInfo } from './machine.ts';
import { runMemory } from './memory.ts';
import { runOverhead } from './overhead.ts';
import { distinctKeysScript, hotKeyScript, pgbench } from './pgbench.ts';
import { generatePrismaClient } from './prisma/generate.ts';
import { type BenchResults, charts, markdown } from './report.ts';
import { checkTargets } from './targets.ts';

// `pnpm bench -- --quick` through the root script can hand a literal `--` on: it is not an argument.
const { values } = parseArgs({
  args: process.argv.slice(2).filter((arg) => arg !== '--'),
  options: { quick: { type: 'boolean', default: false }, out: { type: 'string' } },
  allowPositionals: true,
});
const quick = values.quick ?? false;
const out = values.out ?? fileURLToPath(new URL('../results', import.meta.url));
const plan = quick
  ? { loops: 4, rounds: 1, roundMs: 250, hotMs: 300, memoryCycles: 10_000, pgbenchSeconds: 1 }
  : { loops: 4, rounds: 4, roundMs: 1_000, hotMs: 2_000, memoryCycles: 100_000, pgbenchSeconds: 3 };
const workerCounts = [2, 8, 32];
const started = performance.now();
const log = (line: string) =>
  console.log(`[${((performance.now() - started) / 1_000).toFixed(1)} s] ${line}`);

await generatePrismaClient();
const loadStart = load();
const db = await openDatabase();
let results: BenchResults;
try {
  log(`${db.label}; ${quick ? 'quick' : 'full'} run`);
  const machine = await machineInfo(db.label);
  log('1. overhead per locked transaction');
  const overhead = await runOverhead({ url: db.url, ...plan, log });
  const pgbenchDistinct = await pgbench(db.url, distinctKeysScript, plan.loops, plan.pgbenchSeconds);
  log('2–3. one hot key');
  const hotKey = await runHotKey({ url: db.url, workerCounts, runMs: plan.hotMs, log });
  const pgbenchHot = [];
  for (const workers of workerCounts) {
    pgbenchHot.push({ workers, result: await pgbench(db.url, hotKeyScript, workers, plan.pgbenchSeconds) });
  }
  log('4. memory');
  const memory = await runMemory(db.url, plan.memoryCycles);
  results = {
    mode: quick ? 'quick' : 'full',
    machine,
    settings:
      `${plan.loops} concurrent loops per process; scenario 1 ${plan.rounds} interleaved round(s) of ${plan.roundMs} ms per variant (median); ` +
      `hot key ${plan.hotMs} ms per design and worker count; pgbench -T ${plan.pgbenchSeconds}; ` +
      'sessions run with synchronous_commit=off so that disk flushes do not drown the lock costs',
    load: { start: loadStart, end: load() },
    overhead,
    pgbenchDistinct,
    hotKey,
    pgbenchHot,
    memory,
    targets: checkTargets(overhead, hotKey),
  };
} finally {
  await db.close();
}

await mkdir(out, { recursive: true });
const report = markdown(results);
await writeFile(join(out, 'latest.md'), report);
for (const [name, svg] of Object.entries(charts(results))) await writeFile(join(out, name), svg);
console.log(`\n${report}`);
log(`wrote ${join(out, 'latest.md')} and the SVG charts`);
