import { ORDER_TOLERANCE_US } from './hand-off.ts';
import type { HotKeyResult, HotKeyRow } from './hot-key.ts';
import { type LoadWindow, type MachineInfo, OTHER_WORK_MAX_CORES, otherWork } from './machine.ts';
import type { MemoryResult } from './memory.ts';
import type { MicroResult } from './micro.ts';
import type { OverheadResult, OverheadRow } from './overhead.ts';
import type { PgbenchResult } from './pgbench.ts';
import { PROBE_EVERY_MS, type StarvationRow } from './pool-starvation.ts';
import type { RunOnceStatements } from './run-once-statements.ts';
import { SCENARIO } from './scenario-names.ts';
import { type Bar, barChart } from './svg.ts';
import type { TargetResult } from './targets.ts';

/** What a run measured once for every Node.js line: the machine, and pgbench (the server alone). */
export interface SharedResults {
  readonly mode: 'quick' | 'full';
  /** Measured from TypeScript source (the `@pglock/source` condition) rather than the built packages. */
  readonly source: boolean;
  readonly machine: MachineInfo;
  readonly settings: string;
  readonly load: { readonly start: string; readonly end: string };
  readonly pgbenchDistinct: PgbenchResult;
  readonly timedForms: readonly {
    readonly name: string;
    readonly protocol: 'extended' | 'simple';
    readonly result: PgbenchResult;
  }[];
  readonly pgbenchHot: readonly { readonly workers: number; readonly result: PgbenchResult }[];
}

/** What one Node.js line's process measured (scenarios.ts), with each scenario's load. */
export interface ScenarioResults {
  /** `process.version` of the process that measured. */
  readonly node: string;
  readonly micro: MicroResult;
  readonly overhead: OverheadResult;
  readonly hotKey: HotKeyResult;
  readonly memory: MemoryResult;
  readonly starvation: readonly StarvationRow[];
  readonly runOnce: RunOnceStatements;
  /** By scenario name ({@link SCENARIO}). */
  readonly loads: Readonly<Record<string, LoadWindow>>;
}

/** One Node.js line: its figures and targets, or why it did not run. */
export type NodeRun =
  | {
      readonly major: number;
      readonly results: ScenarioResults;
      readonly targets: readonly TargetResult[];
    }
  | { readonly major: number; readonly notRun: string };

/** Everything one run measured, on every Node.js line. */
export interface BenchResults extends SharedResults {
  readonly runs: readonly NodeRun[];
}

/** One line's figures beside the shared ones: what the per-line sections and charts read. */
type RunView = SharedResults & ScenarioResults & { readonly targets: readonly TargetResult[] };

const n0 = (v: number) => (Number.isFinite(v) ? Math.round(v).toLocaleString('en-US') : 'n/a');
const n1 = (v: number) => (Number.isFinite(v) ? v.toFixed(1) : 'n/a');
const n2 = (v: number) => (Number.isFinite(v) ? v.toFixed(2) : 'n/a');
const n3 = (v: number) => (Number.isFinite(v) ? v.toFixed(3) : 'n/a');
const ratio = (v: number | undefined) => (v === undefined || !Number.isFinite(v) ? '—' : `${v.toFixed(2)}×`);
const trips = (v: number | undefined) => (v === undefined ? '—' : `+${Number(v.toFixed(2))}`);
const pct = (v: number) => (Number.isFinite(v) ? `${(v * 100).toFixed(1)}%` : 'n/a');
const bench = (r: PgbenchResult) => ('skipped' in r ? `skipped: ${r.skipped}` : `${n0(r.tps)} tps`);
const tps = (r: PgbenchResult) => ('skipped' in r ? Number.NaN : r.tps);

function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  return [
    `| ${head.join(' | ')} |`,
    `| ${head.map((_, i) => (i === 0 ? '---' : '---:')).join(' | ')} |`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}

const adaptersOf = (rows: readonly OverheadRow[]) => [
  ...new Set(rows.filter((r) => r.kind !== 'alternative').map((r) => r.adapter)),
];

/**
 * The headline: pglock's cost per adapter and its hot-key hand-off against the alternatives. The
 * README's performance section shows this.
 *
 * @example
 * ```ts
 * console.log(headline(results));
 * ```
 */
export function headline(results: ScenarioResults): string {
  const rows = results.overhead.rows;
  const loopCounts = [...new Set(rows.map((r) => r.loops))];
  const most = Math.max(...loopCounts);
  const pick = (adapter: string, kind: OverheadRow['kind'], loops: number) =>
    rows.find((r) => r.adapter === adapter && r.kind === kind && r.loops === loops);
  const overhead = table(
    [
      'adapter',
      `withLock ops/s (${most} loops)`,
      ...loopCounts.map((l) => `vs hand-written, ${l} loop${l > 1 ? 's' : ''}`),
      ...loopCounts.map((l) => `+ timeoutMs vs untimed hand-written, ${l}`),
      'round trips added (plain / timeoutMs)',
    ],
    adaptersOf(rows).map((adapter) => {
      const plain = pick(adapter, 'withLock', most);
      const bounded = pick(adapter, 'withLock + timeoutMs', most);
      return [
        adapter,
        n0(plain?.opsPerSec ?? Number.NaN),
        ...loopCounts.map((l) => ratio(pick(adapter, 'withLock', l)?.vsSameOrm)),
        ...loopCounts.map((l) => ratio(pick(adapter, 'withLock + timeoutMs', l)?.vsSameOrm)),
        `${trips(plain?.extraRoundTrips)} / ${trips(bounded?.extraRoundTrips)}`,
      ];
    }),
  );
  const hotRows = results.hotKey.rows.filter((r) => r.loops === 1);
  const counts = [...new Set(hotRows.map((r) => r.workers))];
  const designs = [...new Set(hotRows.map((r) => r.design))];
  const hot = table(
    [
      'one hot key',
      ...counts.map((c) => `hand-off p50, ${c} workers (ms)`),
      `throughput, ${counts.at(-1)} workers (/s)`,
    ],
    designs.map((design) => {
      const of = hotRows.filter((r) => r.design === design);
      return [
        design,
        ...counts.map((c) => n3(of.find((r) => r.workers === c)?.handOffP50Ms ?? Number.NaN)),
        n0(of.find((r) => r.workers === counts.at(-1))?.opsPerSec ?? Number.NaN),
      ];
    }),
  );
  return `${overhead}\n\n${hot}`;
}

function overheadTable(rows: readonly OverheadRow[]): string {
  return table(
    [
      'adapter',
      'variant',
      'loops',
      'ops/s',
      'vs hand-written, same ORM',
      'per-round range',
      'vs SET LOCAL + lock',
      'vs hand-written SQL on pg',
      'vs the hooks’ floor',
      'round trips added',
      'client CPU µs per transaction',
      'server CPU µs per transaction',
      'CPU vs hand-written, client / server',
    ],
    rows.map((r) => [
      r.adapter,
      r.kind,
      String(r.loops),
      n0(r.opsPerSec),
      ratio(r.vsSameOrm),
      r.vsSameOrmSpread === undefined
        ? '—'
        : `${ratio(r.vsSameOrmSpread.min)}–${ratio(r.vsSameOrmSpread.max)}`,
      ratio(r.vsSetLocal),
      ratio(r.vsPg),
      ratio(r.vsFloor),
      trips(r.extraRoundTrips),
      n0(r.clientUsPerOp),
      n0(r.serverUsPerOp),
      `${ratio(r.clientVsSameOrm)} / ${ratio(r.serverVsSameOrm)}`,
    ]),
  );
}

function hotKeyTable(rows: readonly HotKeyRow[]): string {
  return table(
    [
      'design',
      'workers',
      'rounds',
      'ops/s',
      'hand-off p50 (ms)',
      'p99 (ms)',
      'hand-offs',
      'largest wait (ms)',
      'out of order, server (waitstart)',
      `server, > ${ORDER_TOLERANCE_US / 1_000} ms`,
      'largest inversion (ms)',
      'waits seen',
      `out of order, client (> ${ORDER_TOLERANCE_US / 1_000} ms)`,
      'client CPU µs per grant',
      'server CPU µs per grant',
      'errors',
    ],
    rows.map((r) => [
      r.design,
      r.loops > 1 ? `1 × ${r.loops} callers` : String(r.workers),
      String(r.rounds),
      n0(r.opsPerSec),
      n3(r.handOffP50Ms),
      n3(r.handOffP99Ms),
      String(r.handOffs),
      n0(r.maxWaitMs),
      r.server === undefined ? '—' : pct(r.server.outOfOrder),
      r.server === undefined ? '—' : pct(r.server.outOfOrderBeyondTolerance),
      r.server === undefined ? '—' : n3(r.server.largestInversionMs),
      r.server === undefined ? '—' : pct(r.server.seen),
      pct(r.outOfOrderBeyondTolerance),
      n0(r.clientUsPerGrant),
      n0(r.serverUsPerGrant),
      String(r.errors),
    ]),
  );
}

/** One Node.js line's sections, its charts under `charts/` (a folder beside latest.md). */
function nodeSections(results: RunView, charts: string): string[] {
  const { micro, overhead, hotKey } = results;
  const loopCounts = [...new Set(overhead.rows.map((r) => r.loops))];
  const protocols = [...new Set(results.timedForms.map((f) => f.protocol))];
  const formNames = [...new Set(results.timedForms.map((f) => f.name))];
  const formTps = (name: string, protocol: string) =>
    tps(
      results.timedForms.find((f) => f.name === name && f.protocol === protocol)?.result ?? { skipped: '' },
    );
  const bare = formNames[0] ?? '';
  const sections = [
    '## Headline',
    headline(results),
    '## 0. pglock’s own JavaScript per call',
    'A node-postgres-shaped pool whose queries resolve at once runs `withLock` and the same hand-written statement sequence (connect, BEGIN, the lock, the work, COMMIT, release): the difference is what pglock itself costs per call, with no database and no network. ' +
      `CPU time per call, median of ${micro.rounds} interleaved rounds of ${n0(micro.callsPerRound)} calls (least of the rounds in brackets).`,
    table(
      ['variant', 'µs per call', 'pglock’s own (µs)'],
      [
        ['hand-written sequence', `${n2(micro.handWrittenUs)} (${n2(micro.min.handWrittenUs)})`, '—'],
        [
          '`withLock`, a bigint key (a new key every call)',
          `${n2(micro.withLockBigintUs)} (${n2(micro.min.withLockBigintUs)})`,
          n2(micro.withLockBigintUs - micro.handWrittenUs),
        ],
        [
          "`withLock`, a name ('account:1')",
          `${n2(micro.withLockNameUs)} (${n2(micro.min.withLockNameUs)})`,
          n2(micro.withLockNameUs - micro.handWrittenUs),
        ],
        [
          '`withLock`, a name, `timeoutMs`',
          `${n2(micro.withLockTimeoutUs)} (${n2(micro.min.withLockTimeoutUs)})`,
          n2(micro.withLockTimeoutUs - micro.handWrittenUs),
        ],
      ],
    ),
    `pglock enables its nesting context (an \`AsyncLocalStorage\`) only while a callback runs, and 10 ms after (each round starts once that has lapsed): on Node 20 and 22 an enabled store charges every promise of the process. The hand-written sequence above runs with none enabled, as an app's other queries do between locks; with a store of someone else's enabled (OpenTelemetry, a web framework's request context) it costs ${n2(micro.handWrittenHookedUs)} µs.`,
    '## 1. Overhead per locked transaction (uncontended, distinct keys)',
    'Each operation is a transaction that increments one counter row; every loop has its own row and every operation its own lock key. ' +
      '"hand-written lock" is `SELECT pg_advisory_xact_lock($1)` as the first statement of the same ORM transaction; "SET LOCAL + lock" sets `lock_timeout` with a statement of its own first (a bounded wait by hand, one more round trip); "no lock" is the same transaction without a lock; "work in an AsyncLocalStorage" (pg) is the hand-written lock with its work run in a store enabled just for it, as pglock runs its callback: what Node\'s hooks cost alone, the floor of any design that nests by async context. ' +
      "Prisma's batch rows are `$transaction([lock, update])` with pglock's `$lock` or a hand-written `$executeRaw` lock; their ratio is to the hand-written batch. " +
      "Ratios are the median of per-round ratios (one adapter's variants run back to back in each round; the order rotates), with their range. Round trips are statements counted on the adapter's own connections, minus the unlocked transaction's.",
    ...loopCounts.map(
      (loops) =>
        `### ${loops} concurrent loop${loops > 1 ? 's' : ''}\n\n${overheadTable(overhead.rows.filter((r) => r.loops === loops))}`,
    ),
    `pgbench, the same locked transaction (prepared statements, 4 clients): ${bench(results.pgbenchDistinct)} — the server's ceiling for this work on this machine.`,
    '### The bounded-wait statement on the server',
    `pgbench, 2 clients, BEGIN / one way of taking a key / COMMIT (no work), ratio to the bare lock in the same protocol. \`extended\` parses and plans each statement with its parameters, as node-postgres and Prisma do; \`simple\` sends literals. See docs/protocol.md for the statement and its ordering argument.`,
    table(
      ['statement', ...protocols.flatMap((p) => [`${p} (tps)`, `${p} vs bare`])],
      formNames.map((name) => [
        name,
        ...protocols.flatMap((p) => [n0(formTps(name, p)), ratio(formTps(name, p) / formTps(bare, p))]),
      ]),
    ),
    `![overhead](${charts}/overhead.svg)`,
    '## 2–3. One hot key: hand-off, throughput, fairness',
    `Every worker is a separate process with one connection, looping lock → increment the hot row → release. pglock and its hand-written SQL alternate round by round (the first to run switches each round); each alternative runs once per worker count. Hand-off is the time from a release that found others waiting (stamped just before COMMIT or unlock is sent) to the first of those waiters running with the lock; the releaser taking the lock back meanwhile does not end it. Every design stamps its arrival just before its lock call starts (before BEGIN). Stamps come from the system-wide monotonic clock all processes share. ` +
      `"Out of order, server" reads the order from PostgreSQL itself: a monitor connection looks at \`pg_locks.waitstart\` for the key about every millisecond, each wait it sees gets the server's arrival time, and a grant is out of order when a waiter that started waiting earlier was granted later ("waits seen": the share of acquisitions whose wait the monitor saw; the shortest waits end between two looks). PostgreSQL stamps \`waitstart\` just after a backend has joined the lock's wait queue, so two backends joining within one scheduling delay can carry stamps in the opposite order of their places in the queue: the "> ${ORDER_TOLERANCE_US / 1_000} ms" column leaves those out, and the largest inversion shows how far apart they were. The client-stamp column is kept for the designs that do not wait in \`pg_locks\`. ` +
      'Polling designs (redlock retries, the try-lock loop) often let the process that just released take the lock again while the others sleep between tries: their waiters are served late.',
    table(
      [
        'pglock ÷ hand-written, per round',
        'rounds',
        'throughput min',
        'median',
        'max',
        'hand-off min',
        'median',
        'max',
        'CPU per grant, client',
        'server',
      ],
      hotKey.comparisons.map((c) => [
        c.loops > 1 ? `1 process × ${c.loops} callers` : `${c.workers} workers`,
        String(hotKey.rows.find((r) => r.workers === c.workers && r.loops === c.loops)?.rounds ?? ''),
        ratio(c.throughput.min),
        ratio(c.throughput.median),
        ratio(c.throughput.max),
        ratio(c.handOff.min),
        ratio(c.handOff.median),
        ratio(c.handOff.max),
        ratio(c.clientCpu),
        ratio(c.serverCpu),
      ]),
    ),
    "Hand-off ratio: hand-written p50 ÷ pglock p50 (above 1: pglock hands over faster). Throughput ratio: pglock ÷ hand-written. CPU per grant: the workers' CPU (`process.cpuUsage()` over their window) and their backends' (/proc) over all rounds, ÷ the locks granted, pglock ÷ hand-written (below 1: pglock spends less per hand-off); at 8 and 32 workers the machine is CPU-bound, so this is the figure that says what a hand-off costs.",
    hotKeyTable(hotKey.rows.filter((r) => r.loops === 1)),
    `pgbench, the same SQL on the hot key: ${results.pgbenchHot.map((p) => `${p.workers} clients ${bench(p.result)}`).join(', ')}.`,
    '### In-process hand-off',
    'One process with several callers on one key, one pool with a connection per caller. pglock queues the callers of one process in memory and only the head waits on the server; the hand-written SQL has every caller waiting on the server. Hand-off is timed as above, between callers of the one process.',
    hotKeyTable(hotKey.rows.filter((r) => r.loops > 1)),
    `![hand-off](${charts}/hot-key-hand-off.svg)\n\n![throughput](${charts}/hot-key-throughput.svg)`,
    '## 4. Memory',
    `${n0(results.memory.points.at(-1)?.cycles ?? 0)} withLock cycles (pg adapter) in one process; memory read after a forced GC${results.memory.gcExposed ? '' : ' (**gc not exposed: run with node --expose-gc**)'}. ` +
      `Heap change from the first checkpoint to the last: ${results.memory.heapBytesPerCycle.toFixed(2)} bytes per cycle; RSS change ${results.memory.rssGrowthMb.toFixed(1)} MB.`,
    table(
      ['cycles', 'RSS (MB)', 'heap used (MB)'],
      results.memory.points.map((p) => [n0(p.cycles), p.rssMb.toFixed(1), p.heapUsedMb.toFixed(2)]),
    ),
    `![memory](${charts}/memory.svg)`,
    '## 5. Waiters and the pool',
    `100 concurrent lock calls on one key, each holding it 20 ms, through one \`pg.Pool\` of 10, while an unrelated \`SELECT 1\` is sent on the same pool every ${PROBE_EVERY_MS} ms; the designs alternate round by round. With every waiter on the server, the waiters hold every pooled connection and the rest of the app waits for the burst; pglock's in-process queue keeps one waiter on the server.`,
    table(
      [
        'design',
        'burst (ms)',
        'SELECT 1 p50 (ms)',
        'p99 (ms)',
        'max (ms)',
        'probes',
        'connections in use (max)',
      ],
      results.starvation.map((s) => [
        s.design,
        n0(s.burstMs),
        n1(s.probeP50Ms),
        n1(s.probeP99Ms),
        n1(s.probeMaxMs),
        String(s.probes),
        String(s.connectionsInUse),
      ]),
    ),
  ];
  // Under the line's own heading: every heading one level down.
  return sections.map((section) => (section.startsWith('#') ? `#${section}` : section));
}

/**
 * The SVG charts, by file name.
 *
 * @example
 * ```ts
 * for (const [name, svg] of Object.entries(charts(results))) await writeFile(name, svg);
 * ```
 */
export function charts(results: ScenarioResults): Record<string, string> {
  const most = Math.max(...results.overhead.rows.map((r) => r.loops));
  const overheadBars: Bar[] = results.overhead.rows
    .filter((r) => r.loops === most)
    .map((r) => ({
      label: `${r.adapter} · ${r.kind === 'alternative' ? 'lock' : r.kind}`,
      value: r.opsPerSec,
      series:
        r.kind === 'alternative'
          ? 'alternatives'
          : r.kind.startsWith('withLock') || r.kind === '$lock batch'
            ? 'pglock'
            : 'hand-written / none',
    }));
  const hotRows = results.hotKey.rows.filter((r) => r.loops === 1);
  const hotBars = (pick: (r: HotKeyRow) => number): Bar[] =>
    hotRows.map((r) => ({
      label: `${r.design} × ${r.workers}`,
      value: pick(r),
      series: `${r.workers} workers`,
    }));
  return {
    'overhead.svg': barChart({
      title: `Uncontended locked transactions (${most} loops)`,
      unit: 'operations per second',
      bars: overheadBars,
    }),
    'hot-key-hand-off.svg': barChart({
      title: 'One hot key: hand-off latency, p50',
      unit: 'milliseconds from release to the next waiter running',
      bars: hotBars((r) => r.handOffP50Ms),
      log: true,
    }),
    'hot-key-throughput.svg': barChart({
      title: 'One hot key: throughput',
      unit: 'lock cycles per second, all workers',
      bars: hotBars((r) => r.opsPerSec),
    }),
    'memory.svg': barChart({
      title: 'Memory after withLock cycles (after GC)',
      unit: 'heap used, MB',
      bars: results.memory.points.map((p) => ({ label: `${n0(p.cycles)} cycles`, value: p.heapUsedMb })),
    }),
    'pool-starvation.svg': barChart({
      title: 'An unrelated SELECT 1 during a burst of 100 waiters, pool of 10',
      unit: 'p99 latency, ms',
      bars: results.starvation.map((s) => ({ label: s.design, value: s.probeP99Ms })),
      log: true,
    }),
  };
}

/** "met: …", "**missed**: …", "not judged (load 3.4 > 2 cores): …", "reported: …". */
const verdict = (t: TargetResult, status: string = t.status) =>
  `${status}${t.status === 'not judged' ? ' ' : ': '}${t.detail}`;
const cell = (t: TargetResult | undefined) =>
  t === undefined ? '—' : verdict(t, t.status === 'missed' ? '**missed**' : t.status);
const lineName = (run: NodeRun) => ('notRun' in run ? `Node ${run.major}` : `Node ${run.results.node}`);

/**
 * Each Node.js line's target verdicts, one line each, for the console.
 *
 * @example
 * ```ts
 * for (const line of targetLines(results)) console.log(line);
 * ```
 */
export function targetLines(results: BenchResults): string[] {
  return results.runs.flatMap((run) => {
    if ('notRun' in run) return [`${lineName(run)}: not run (${run.notRun})`];
    const loads = Object.entries(run.results.loads)
      .map(
        ([name, w]) =>
          `${name.split('.')[0]}: ${w.start.toFixed(1)}→${w.end.toFixed(1)} (most ${w.max.toFixed(1)}; other work ${otherWork(w)})`,
      )
      .join(', ');
    return [
      `${lineName(run)}: load per scenario ${loads}; ${run.results.loads[SCENARIO.micro]?.cores ?? '?'} cores`,
      ...run.targets.map((t) => `  ${t.target}: ${verdict(t, t.status.toUpperCase())}`),
    ];
  });
}

/**
 * The whole report as Markdown (bench/results/latest.md): the targets per Node.js line side by
 * side, the CPU figures, then each line's sections.
 *
 * @example
 * ```ts
 * await writeFile('results/latest.md', markdown(results));
 * ```
 */
export function markdown(results: BenchResults): string {
  const { machine } = results;
  const versions = Object.entries(machine.versions)
    .map(([name, version]) => `${name} ${version}`)
    .join(', ');
  const ran = results.runs.filter((r): r is Extract<NodeRun, { results: unknown }> => 'results' in r);
  const names = ran[0]?.targets.map((t) => t.target) ?? [];
  const scenarios = Object.values(SCENARIO);
  const sections = [
    `# pglock benchmarks (${results.mode} run)`,
    `Measured ${machine.date} on ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGb.toFixed(1)} GB memory, on ${results.runs.map(lineName).join(' and ')}: every scenario that runs JavaScript runs once per Node.js line, in a process of its own, one line after the other; pgbench (the server alone) runs once. ` +
      `Load average (1 min) ${results.load.start} at the start, ${results.load.end} at the end: anything else running on the machine shows in the figures. ` +
      `With ${machine.cores} cores, 32 worker processes plus PostgreSQL are CPU-bound: the 32-worker rows measure an overloaded machine.`,
    `Versions: ${versions}.`,
    `Settings: ${results.settings}. ${results.source ? 'The packages are measured from their TypeScript source (`pnpm bench:source`, through tsx).' : 'The packages are measured as built (`dist`, what users install).'} Regenerate with \`pnpm bench\` (\`pnpm bench -- --quick\` for a smoke run).`,
    ...results.runs
      .filter((r) => 'notRun' in r)
      .map((r) => `**${lineName(r)} not run:** ${(r as { notRun: string }).notRun}.`),
    '## Targets per Node.js line',
    `A target is "not judged" when other work (every process but the bench's own, PostgreSQL's and Redis's) took more than ${OTHER_WORK_MAX_CORES} of a core on average during its scenario (its figures are shown; run again on a quiet machine), "reported" when it has no target on that line. The load average is shown beside it but does not judge: the bench's own 32 hot-key workers make it 13 on 2 cores, and it lags a minute behind. Each throughput ratio has the CPU ratios beside it (pglock ÷ hand-written, per transaction, client / server): CPU time per transaction moves far less than throughput on a busy machine.`,
    table(
      ['target', ...ran.map(lineName)],
      names.map((name) => [name, ...ran.map((r) => cell(r.targets.find((t) => t.target === name)))]),
    ),
    '## Load per scenario',
    `The 1-minute load average at each scenario's start → end (the most seen, sampled every second), and the CPU other work took meanwhile (the CPU time of every user-space process but the bench's own process tree and the PostgreSQL and Redis servers, from \`/proc/<pid>/stat\`), against ${ran[0]?.results.loads[SCENARIO.micro]?.cores ?? machine.cores} cores (\`os.availableParallelism()\`).`,
    table(
      ['scenario', ...ran.map(lineName)],
      scenarios.map((name) => [
        name,
        ...ran.map((r) => {
          const w = r.results.loads[name];
          return w === undefined
            ? '—'
            : `${n1(w.start)} → ${n1(w.end)} (most ${n1(w.max)}); other work ${otherWork(w)}`;
        }),
      ]),
    ),
    '## CPU per locked transaction',
    "Client: the bench process's `process.cpuUsage()` over the measured windows; server: the CPU of the subject's own backends (found by `application_name`, read from `/proc/<pid>/schedstat`, or utime + stime of `/proc/<pid>/stat` in clock ticks where schedstat is missing), over the same windows; both divided by the transactions of all rounds. Ratios: pglock ÷ the hand-written lock on the same ORM (the batch: ÷ the hand-written batch). Only the backends open when a window starts count: a design that connects per lock (advisory-lock) shows n/a, and Redis's own CPU (redlock) is not counted." +
      (ran.some((r) => r.results.overhead.serverCpu)
        ? ` Server CPU n/a: ${ran.map((r) => r.results.overhead.serverCpu).find(Boolean)}.`
        : ''),
    table(
      [
        'adapter',
        'variant',
        'loops',
        ...ran.flatMap((r) => [
          `${lineName(r)}: client µs`,
          'server µs',
          'client / server vs hand-written',
          'throughput vs hand-written',
        ]),
      ],
      (ran[0]?.results.overhead.rows ?? [])
        .filter((row) => row.kind.startsWith('withLock') || row.kind.includes('batch'))
        .map((row) => [
          row.adapter,
          row.kind,
          String(row.loops),
          ...ran.flatMap((r) => {
            const mine = r.results.overhead.rows.find(
              (o) => o.adapter === row.adapter && o.kind === row.kind && o.loops === row.loops,
            );
            return mine === undefined
              ? ['—', '—', '—', '—']
              : [
                  n0(mine.clientUsPerOp),
                  n0(mine.serverUsPerOp),
                  `${ratio(mine.clientVsSameOrm)} / ${ratio(mine.serverVsSameOrm)}`,
                  ratio(mine.vsSameOrm),
                ];
          }),
        ]),
    ),
    '## Hot key: CPU per grant',
    'Client CPU (every worker process, over its window) and server CPU (the workers\' backends) per granted lock, pglock ÷ hand-written, beside the throughput ratio (the median of per-round ratios). At 8 and 32 workers the 2-core machine is CPU-bound, so throughput follows the CPU each grant costs. No target beyond "not worse than today".',
    table(
      [
        'workers',
        ...ran.flatMap((r) => [
          `${lineName(r)}: throughput`,
          'client CPU',
          'server CPU',
          'µs per grant, client + server: pglock',
          'hand-written',
        ]),
      ],
      (ran[0]?.results.hotKey.comparisons ?? []).map((c) => [
        c.loops > 1 ? `1 process × ${c.loops} callers` : String(c.workers),
        ...ran.flatMap((r) => {
          const mine = r.results.hotKey.comparisons.find(
            (o) => o.workers === c.workers && o.loops === c.loops,
          );
          const of = (pglock: boolean) =>
            r.results.hotKey.rows.find(
              (o) =>
                o.workers === c.workers && o.loops === c.loops && o.design.startsWith('pglock') === pglock,
            );
          const perGrant = (row: HotKeyRow | undefined) =>
            row === undefined ? '—' : `${n0(row.clientUsPerGrant)} + ${n0(row.serverUsPerGrant)}`;
          return mine === undefined
            ? ['—', '—', '—', '—', '—']
            : [
                ratio(mine.throughput.median),
                ratio(mine.clientCpu),
                ratio(mine.serverCpu),
                perGrant(of(true)),
                perGrant(of(false)),
              ];
        }),
      ]),
    ),
    '## Statements per `runOnce`',
    "Counted on the pg adapter's connection, over 20 calls each, with a job that sends one `SELECT 1` (not counted): a call that runs its job (a new period), one that finds the period already run, and one whose job throws.",
    table(
      ['call', ...ran.map(lineName)],
      (
        [
          ['runs its job', 'ran'],
          ['period already run', 'alreadyRan'],
          ['job throws', 'failed'],
        ] as const
      ).map(([label, field]) => [
        label,
        ...ran.map((r) =>
          r.results.runOnce.skipped
            ? `skipped: ${r.results.runOnce.skipped}`
            : n2(r.results.runOnce[field] ?? Number.NaN),
        ),
      ]),
    ),
    ...ran.flatMap((r) => [
      `## ${lineName(r)}`,
      ...nodeSections({ ...results, ...r.results, targets: r.targets }, `node-${r.major}`),
    ]),
  ];
  return `${sections.join('\n\n')}\n`;
}
