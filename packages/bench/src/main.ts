// `pnpm bench` (full, several minutes) and `pnpm bench -- --quick` (a smoke run, about a minute).
// A full run writes results/latest.md and one SVG chart per scenario; a quick run writes them to
// results/quick/ (gitignored), so a smoke run never rewrites the committed figures; `--out DIR`
// writes them elsewhere.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { generatePrismaClient } from './prisma/generate.ts';

// `pnpm bench -- --quick` through the root script can hand a literal `--` on: it is not an argument.
const { values } = parseArgs({
  args: process.argv.slice(2).filter((arg) => arg !== '--'),
  options: { quick: { type: 'boolean', default: false }, out: { type: 'string' } },
  allowPositionals: true,
});
const quick = values.quick ?? false;
const out = values.out ?? fileURLToPath(new URL(quick ? '../results/quick' : '../results', import.meta.url));
const plan = quick
  ? {
      loopCounts: [1, 4],
      rounds: 1,
      roundMs: 250,
      hotRounds: 2,
      hotRoundMs: 300,
      alternativeMs: 300,
      memoryCycles: 10_000,
      pgbenchSeconds: 1,
      microRounds: 5,
      starvationRounds: 1,
    }
  : {
      loopCounts: [1, 4],
      // Many short rounds rather than a few long ones, for the same time per variant: the variants
      // compared then run within a fraction of a second of each other, so the load of a shared
      // machine, which drifts over seconds, hits them alike, and the median of per-round ratios
      // shrugs off a slow moment.
      rounds: 50,
      roundMs: 75,
      hotRounds: 10,
      hotRoundMs: 500,
      alternativeMs: 2_000,
      memoryCycles: 100_000,
      pgbenchSeconds: 3,
      microRounds: 21,
      starvationRounds: 3,
    };
const workerCounts = [2, 8, 32];
const started = performance.now();
const log = (line: string) =>
  console.log(`[${((performance.now() - started) / 1_000).toFixed(1)} s] ${line}`);

// The Prisma subject imports the generated client, so it is generated before anything imports it
// (a fresh clone has none: it is gitignored).
await generatePrismaClient();
const { openDatabase } = await import('./database.ts');
const { runHotKey } = await import('./hot-key.ts');
const { load, machineInfo } = await import('./machine.ts');
const { runMemory } = await import('./memory.ts');
const { runMicro } = await import('./micro.ts');
const { runOverhead } = await import('./overhead.ts');
const { distinctKeysScript, hotKeyScript, pgbench, timedFormScripts } = await import('./pgbench.ts');
const { runStarvation } = await import('./pool-starvation.ts');
const { charts, markdown } = await import('./report.ts');
const { checkTargets } = await import('./targets.ts');
const { timedStatementText } = await import('./timed-text.ts');

const loadStart = load();
const db = await openDatabase();
let results: import('./report.ts').BenchResults;
try {
  log(`${db.label}; ${quick ? 'quick' : 'full'} run, results to ${out}`);
  const machine = await machineInfo(db.label);
  log('0. pglock’s own JavaScript per call (no database)');
  const micro = await runMicro({ rounds: plan.microRounds, callsPerRound: 20_000 });
  log(`  withLock − hand-written: name ${(micro.withLockNameUs - micro.handWrittenUs).toFixed(2)} µs`);
  log('1. overhead per locked transaction');
  const overhead = await runOverhead({ url: db.url, ...plan, log });
  const pgbenchDistinct = await pgbench(db.url, distinctKeysScript, 4, plan.pgbenchSeconds);
  log('   pgbench: bounded-wait statement forms');
  const timedForms = [];
  for (const protocol of ['extended', 'simple'] as const) {
    for (const { name, script } of timedFormScripts(await timedStatementText())) {
      timedForms.push({
        name,
        protocol,
        result: await pgbench(db.url, script, 2, plan.pgbenchSeconds, protocol),
      });
    }
  }
  log('2–3. one hot key');
  const hotKey = await runHotKey({
    url: db.url,
    workerCounts,
    rounds: plan.hotRounds,
    roundMs: plan.hotRoundMs,
    alternativeMs: plan.alternativeMs,
    inProcessLoops: 8,
    log,
  });
  const pgbenchHot = [];
  for (const workers of workerCounts) {
    pgbenchHot.push({ workers, result: await pgbench(db.url, hotKeyScript, workers, plan.pgbenchSeconds) });
  }
  log('4. memory');
  const memory = await runMemory(db.url, plan.memoryCycles);
  log('5. waiters and the pool');
  const starvation = await runStarvation({
    url: db.url,
    callers: 100,
    holdMs: 20,
    poolSize: 10,
    rounds: plan.starvationRounds,
    log,
  });
  results = {
    mode: quick ? 'quick' : 'full',
    source: process.execArgv.some((arg) => arg.includes('@pglock/source')),
    machine,
    settings:
      `scenario 1 at ${plan.loopCounts.join(' and ')} concurrent loop(s), ${plan.rounds} interleaved round(s) of ${plan.roundMs} ms per variant (median); ` +
      `hot key: pglock and hand-written alternated for ${plan.hotRounds} round(s) of ${plan.hotRoundMs} ms per worker count, each alternative ${plan.alternativeMs} ms; ` +
      `pgbench -T ${plan.pgbenchSeconds}; sessions run with synchronous_commit=off so that disk flushes do not drown the lock costs`,
    load: { start: loadStart, end: load() },
    micro,
    overhead,
    pgbenchDistinct,
    timedForms,
    hotKey,
    pgbenchHot,
    memory,
    starvation,
    targets: [],
  };
  results = { ...results, targets: checkTargets(results) };
} finally {
  await db.close();
}

await mkdir(out, { recursive: true });
const report = markdown(results);
await writeFile(join(out, 'latest.md'), report);
for (const [name, svg] of Object.entries(charts(results))) await writeFile(join(out, name), svg);
console.log(`\n${report}`);
log(
  `wrote ${join(out, 'latest.md')} and the SVG charts${quick && values.out === undefined ? ' (a quick run: gitignored, the committed results are untouched)' : ''}`,
);
