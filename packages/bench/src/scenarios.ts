// The scenarios that depend on the Node.js version, run in one process per Node binary: main.ts
// starts this file once per line (20, 24) and reads the JSON it writes. The database is main's
// (PGLOCK_BENCH_URL); pgbench, which measures the server alone, runs once in main.
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { runHotKey } from './hot-key.ts';
import { type LoadWindow, otherWork, watchLoad } from './machine.ts';
import { runMemory } from './memory.ts';
import { runMicro } from './micro.ts';
import { runOverhead } from './overhead.ts';
import { runStarvation } from './pool-starvation.ts';
import type { ScenarioResults } from './report.ts';
import { toJson } from './results-json.ts';
import { countRunOnce } from './run-once-statements.ts';
import { SCENARIO } from './scenario-names.ts';

/** How long and how often each scenario measures, for a full run or a quick one. */
export function planFor(quick: boolean) {
  return quick
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
}

export const WORKER_COUNTS = [2, 8, 32];

if (process.argv[1]?.endsWith('scenarios.ts')) {
  const { values } = parseArgs({
    args: process.argv.slice(2).filter((arg) => arg !== '--'),
    options: { quick: { type: 'boolean', default: false }, json: { type: 'string' } },
  });
  const url = process.env.PGLOCK_BENCH_URL;
  if (url === undefined || values.json === undefined) {
    throw new Error('scenarios.ts is started by main.ts (PGLOCK_BENCH_URL and --json FILE)');
  }
  const plan = planFor(values.quick ?? false);
  const started = performance.now();
  const major = process.versions.node.split('.')[0];
  const log = (line: string) =>
    console.log(`[Node ${major} ${((performance.now() - started) / 1_000).toFixed(1)} s] ${line}`);
  const loads: Record<string, LoadWindow> = {};
  // Each scenario's load: printed at its start and end with the CPU other work took meanwhile, and
  // kept, so a target measured while other work competed for the cores is not judged.
  const scenario = async <T>(name: string, body: () => Promise<T>): Promise<T> => {
    const watch = watchLoad();
    log(`${name} (load ${watch.start.toFixed(1)})`);
    try {
      return await body();
    } finally {
      const window = watch.stop();
      loads[name] = window;
      log(
        `  load ${window.start.toFixed(1)} at the start, ${window.end.toFixed(1)} at the end, most ${window.max.toFixed(1)} (${window.cores} cores); other work ${otherWork(window)}`,
      );
    }
  };
  const micro = await scenario(SCENARIO.micro, () =>
    runMicro({ rounds: plan.microRounds, callsPerRound: 20_000 }),
  );
  log(`  withLock − hand-written: name ${(micro.withLockNameUs - micro.handWrittenUs).toFixed(2)} µs`);
  const overhead = await scenario(SCENARIO.overhead, () => runOverhead({ url, ...plan, log }));
  const hotKey = await scenario(SCENARIO.hotKey, () =>
    runHotKey({
      url,
      workerCounts: WORKER_COUNTS,
      rounds: plan.hotRounds,
      roundMs: plan.hotRoundMs,
      alternativeMs: plan.alternativeMs,
      inProcessLoops: 8,
      log,
    }),
  );
  const memory = await scenario(SCENARIO.memory, () => runMemory(url, plan.memoryCycles));
  const starvation = await scenario(SCENARIO.starvation, () =>
    runStarvation({ url, callers: 100, holdMs: 20, poolSize: 10, rounds: plan.starvationRounds, log }),
  );
  const runOnce = await scenario(SCENARIO.runOnce, () => countRunOnce(url));
  const results: ScenarioResults = {
    node: process.version,
    micro,
    overhead,
    hotKey,
    memory,
    starvation,
    runOnce,
    loads,
  };
  await writeFile(values.json, toJson(results));
}
