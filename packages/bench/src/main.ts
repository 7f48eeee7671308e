// `pnpm bench` (full, several minutes per Node.js line) and `pnpm bench -- --quick` (a smoke run,
// about a minute per line). Every scenario that runs JavaScript runs once on Node 20 and once on
// Node 24 (scenarios.ts, one child process per line, writing JSON; Node 24 comes from the npm
// registry into the gitignored .node/, see node-versions.ts); pgbench runs once; one report shows
// both lines. A full run writes results/latest.md and the SVG charts of each line
// (results/node-<major>/); a quick run writes them to results/quick/ (gitignored), so a smoke run
// never rewrites the committed figures; `--out DIR` writes them elsewhere; `--node 24` runs one line.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { generatePrismaClient } from './prisma/generate.ts';

// `pnpm bench -- --quick` through the root script can hand a literal `--` on: it is not an argument.
const { values } = parseArgs({
  args: process.argv.slice(2).filter((arg) => arg !== '--'),
  options: {
    quick: { type: 'boolean', default: false },
    out: { type: 'string' },
    node: { type: 'string', multiple: true },
  },
  allowPositionals: true,
});
const quick = values.quick ?? false;
const out = values.out ?? fileURLToPath(new URL(quick ? '../results/quick' : '../results', import.meta.url));
const started = performance.now();
const log = (line: string) =>
  console.log(`[${((performance.now() - started) / 1_000).toFixed(1)} s] ${line}`);

// The Prisma subject imports the generated client, so it is generated before anything imports it
// (a fresh clone has none: it is gitignored).
await generatePrismaClient();
const { openDatabase } = await import('./database.ts');
const { load, machineInfo } = await import('./machine.ts');
const { NODE_MAJORS, nodeBinary } = await import('./node-versions.ts');
const { distinctKeysScript, hotKeyScript, pgbench, timedFormScripts } = await import('./pgbench.ts');
const { charts, markdown, targetLines } = await import('./report.ts');
const { fromJson } = await import('./results-json.ts');
const { planFor, WORKER_COUNTS } = await import('./scenarios.ts');
const { checkTargets } = await import('./targets.ts');
const { timedStatementText } = await import('./timed-text.ts');
type NodeRun = import('./report.ts').NodeRun;
type ScenarioResults = import('./report.ts').ScenarioResults;

const plan = planFor(quick);
const majors = values.node?.map(Number) ?? [...NODE_MAJORS];
const scenariosPath = fileURLToPath(new URL('./scenarios.ts', import.meta.url));
// The children resolve packages as this process does (built output, or source with the condition).
const conditions = process.execArgv.filter((arg) => arg.startsWith('--conditions'));

/** Runs scenarios.ts on `node`, its output shown as it comes; its JSON, or why there is none. */
async function runLine(node: string, url: string, json: string): Promise<ScenarioResults | string> {
  const args = [...conditions, '--expose-gc', '--import', 'tsx', scenariosPath, '--json', json];
  if (quick) args.push('--quick');
  const child = spawn(node, args, {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    env: { ...process.env, PGLOCK_BENCH_URL: url, PGLOCK_BENCH_ROOT: String(process.pid) },
    stdio: ['ignore', 'inherit', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += String(chunk);
    process.stderr.write(chunk);
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (code !== 0)
    return `the scenarios exited with ${code}: ${stderr.trim().split('\n').slice(-3).join(' ')}`;
  return fromJson<ScenarioResults>(await readFile(json, 'utf8'));
}

const loadStart = load();
const binaries = [];
for (const major of majors) binaries.push(await nodeBinary(major, log));
const db = await openDatabase();
const scratch = await mkdtemp(join(tmpdir(), 'pglock-bench-'));
let results: import('./report.ts').BenchResults;
try {
  log(`${db.label}; ${quick ? 'quick' : 'full'} run, results to ${out}`);
  const machine = await machineInfo(db.label);
  log('pgbench: the server alone (once for every Node.js line)');
  const pgbenchDistinct = await pgbench(db.url, distinctKeysScript, 4, plan.pgbenchSeconds);
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
  const pgbenchHot = [];
  for (const workers of WORKER_COUNTS) {
    pgbenchHot.push({ workers, result: await pgbench(db.url, hotKeyScript, workers, plan.pgbenchSeconds) });
  }
  const shared = {
    mode: quick ? ('quick' as const) : ('full' as const),
    source: conditions.some((arg) => arg.includes('@pglock/source')),
    machine,
    settings:
      `scenario 1 at ${plan.loopCounts.join(' and ')} concurrent loop(s), ${plan.rounds} interleaved round(s) of ${plan.roundMs} ms per variant (median); ` +
      `hot key: pglock and hand-written alternated for ${plan.hotRounds} round(s) of ${plan.hotRoundMs} ms per worker count, each alternative ${plan.alternativeMs} ms; ` +
      `pgbench -T ${plan.pgbenchSeconds}; sessions run with synchronous_commit=off so that disk flushes do not drown the lock costs`,
    pgbenchDistinct,
    timedForms,
    pgbenchHot,
  };
  const runs: NodeRun[] = [];
  for (const binary of binaries) {
    if ('notRun' in binary) {
      log(`Node ${binary.major}: not run (${binary.notRun})`);
      runs.push(binary);
      continue;
    }
    log(`Node ${binary.version} (${binary.path})`);
    const line = await runLine(binary.path, db.url, join(scratch, `node-${binary.major}.json`));
    if (typeof line === 'string') {
      log(`Node ${binary.major}: not run (${line})`);
      runs.push({ major: binary.major, notRun: line });
    } else {
      runs.push({ major: binary.major, results: line, targets: checkTargets(line, shared) });
    }
  }
  results = { ...shared, load: { start: loadStart, end: load() }, runs };
} finally {
  await db.close();
  await rm(scratch, { recursive: true, force: true });
}

await mkdir(out, { recursive: true });
const report = markdown(results);
await writeFile(join(out, 'latest.md'), report);
for (const run of results.runs) {
  if (!('results' in run)) continue;
  const dir = join(out, `node-${run.major}`);
  await mkdir(dir, { recursive: true });
  for (const [name, svg] of Object.entries(charts(run.results))) await writeFile(join(dir, name), svg);
}
console.log(`\n${report}`);
console.log('Targets per Node.js line:');
for (const line of targetLines(results)) console.log(line);
log(
  `wrote ${join(out, 'latest.md')} and the SVG charts${quick && values.out === undefined ? ' (a quick run: gitignored, the committed results are untouched)' : ''}`,
);
// A line that did not run is a failed bench, never a silent one.
if (results.runs.some((r) => 'notRun' in r)) process.exitCode = 1;
