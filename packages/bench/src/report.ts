import { ORDER_TOLERANCE_US } from './hand-off.ts';
import type { HotKeyRow } from './hot-key.ts';
import type { MachineInfo } from './machine.ts';
import type { MemoryResult } from './memory.ts';
import type { OverheadRow } from './overhead.ts';
import type { PgbenchResult } from './pgbench.ts';
import { type Bar, barChart } from './svg.ts';
import type { TargetResult } from './targets.ts';

/** Everything one run measured. */
export interface BenchResults {
  readonly mode: 'quick' | 'full';
  readonly machine: MachineInfo;
  readonly settings: string;
  readonly load: { readonly start: string; readonly end: string };
  readonly overhead: readonly OverheadRow[];
  readonly pgbenchDistinct: PgbenchResult;
  readonly hotKey: readonly HotKeyRow[];
  readonly pgbenchHot: readonly { readonly workers: number; readonly result: PgbenchResult }[];
  readonly memory: MemoryResult;
  readonly targets: readonly TargetResult[];
}

const n0 = (v: number) => (Number.isFinite(v) ? Math.round(v).toLocaleString('en-US') : 'n/a');
const n3 = (v: number) => (Number.isFinite(v) ? v.toFixed(3) : 'n/a');
const ratio = (v: number | undefined) => (v === undefined ? '—' : `${v.toFixed(2)}×`);
const trips = (v: number | undefined) => (v === undefined ? '—' : `+${Number(v.toFixed(2))}`);
const pct = (v: number) => `${(v * 100).toFixed(1)}%`;
const bench = (r: PgbenchResult) => ('skipped' in r ? `skipped: ${r.skipped}` : `${n0(r.tps)} tps`);

function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  return [
    `| ${head.join(' | ')} |`,
    `| ${head.map((_, i) => (i === 0 ? '---' : '---:')).join(' | ')} |`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}

/**
 * The headline: pglock's cost per adapter and its hot-key hand-off against the alternatives. The
 * README's performance section shows this.
 *
 * @example
 * ```ts
 * console.log(headline(results));
 * ```
 */
export function headline(results: BenchResults): string {
  const adapters = [
    ...new Set(results.overhead.filter((r) => r.kind !== 'alternative').map((r) => r.adapter)),
  ];
  const overhead = table(
    ['adapter', 'withLock ops/s', 'vs hand-written lock, same ORM', 'round trips added (plain / timeoutMs)'],
    adapters.map((adapter) => {
      const rows = results.overhead.filter((r) => r.adapter === adapter);
      const plain = rows.find((r) => r.kind === 'withLock');
      const bounded = rows.find((r) => r.kind === 'withLock + timeoutMs');
      const main = plain ?? bounded!;
      return [
        adapter,
        n0(main.opsPerSec),
        ratio(main.vsSameOrm),
        `${plain ? trips(plain.extraRoundTrips) : '(always bounded)'} / ${trips(bounded?.extraRoundTrips)}`,
      ];
    }),
  );
  const counts = [...new Set(results.hotKey.map((r) => r.workers))];
  const designs = [...new Set(results.hotKey.map((r) => r.design))];
  const hot = table(
    [
      'one hot key',
      ...counts.map((c) => `hand-off p50, ${c} workers (ms)`),
      `throughput, ${counts.at(-1)} workers (/s)`,
    ],
    designs.map((design) => {
      const rows = results.hotKey.filter((r) => r.design === design);
      return [
        design,
        ...counts.map((c) => n3(rows.find((r) => r.workers === c)?.handOffP50Ms ?? Number.NaN)),
        n0(rows.find((r) => r.workers === counts.at(-1))?.opsPerSec ?? Number.NaN),
      ];
    }),
  );
  return `${overhead}\n\n${hot}`;
}

/**
 * The whole report as Markdown (bench/results/latest.md).
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
  const sections = [
    `# pglock benchmarks (${results.mode} run)`,
    `Measured ${machine.date} on ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGb.toFixed(1)} GB memory, Node ${machine.node}. ` +
      `Load average (1 min) ${results.load.start} at the start, ${results.load.end} at the end: anything else running on the machine shows in the figures. ` +
      `With ${machine.cores} cores, 32 worker processes plus PostgreSQL are CPU-bound: the 32-worker rows measure an overloaded machine.`,
    `Versions: ${versions}.`,
    `Settings: ${results.settings}. Regenerate with \`pnpm bench\` (\`pnpm bench -- --quick\` for a smoke run).`,
    '## Headline',
    headline(results),
    '## Targets',
    table(
      ['target', 'met', 'measured'],
      results.targets.map((t) => [t.target, t.met ? 'yes' : '**no**', t.detail]),
    ),
    '## 1. Overhead per locked transaction (uncontended, distinct keys)',
    'Each operation is a transaction that increments one counter row; every loop has its own row and every operation its own lock key. ' +
      '"hand-written lock" is `SELECT pg_advisory_xact_lock($1)` as the first statement of the same ORM transaction; "no lock" is the same transaction without it. ' +
      "Round trips are statements counted on the adapter's own connections, minus the unlocked transaction's.",
    table(
      [
        'adapter',
        'variant',
        'ops/s',
        'vs hand-written, same ORM',
        'vs hand-written SQL on pg',
        'round trips added',
      ],
      results.overhead.map((r) => [
        r.adapter,
        r.kind,
        n0(r.opsPerSec),
        ratio(r.vsSameOrm),
        ratio(r.vsPg),
        trips(r.extraRoundTrips),
      ]),
    ),
    `pgbench, the same locked transaction (prepared statements): ${bench(results.pgbenchDistinct)} — the server's ceiling for this work on this machine.`,
    '![overhead](overhead.svg)',
    '## 2–3. One hot key: hand-off, throughput, fairness',
    `Every worker is a separate process with one connection, looping lock → increment the hot row → release. Hand-off is the time from a release that found other workers waiting (stamped just before COMMIT or unlock is sent) to the first of those waiters running with the lock; the releaser taking the lock back meanwhile does not end it. Stamps come from the system-wide monotonic clock all processes share. ` +
      `"Out of order" is the share of acquisitions that went ahead of a waiter who arrived earlier; the first column counts only waiters who arrived more than ${ORDER_TOLERANCE_US / 1_000} ms earlier (closer arrivals can reach the server in either order). ` +
      'Polling designs (redlock retries, the try-lock loop) often let the process that just released take the lock again while the others sleep between tries: their waiters are served late.',
    table(
      [
        'design',
        'workers',
        'ops/s',
        'hand-off p50 (ms)',
        'p99 (ms)',
        'hand-offs',
        'largest wait (ms)',
        `out of order (> ${ORDER_TOLERANCE_US / 1_000} ms)`,
        'out of order (any)',
        'errors',
      ],
      results.hotKey.map((r) => [
        r.design,
        String(r.workers),
        n0(r.opsPerSec),
        n3(r.handOffP50Ms),
        n3(r.handOffP99Ms),
        String(r.handOffs),
        n0(r.maxWaitMs),
        pct(r.outOfOrderBeyondTolerance),
        pct(r.outOfOrder),
        String(r.errors),
      ]),
    ),
    `pgbench, the same SQL on the hot key: ${results.pgbenchHot.map((p) => `${p.workers} clients ${bench(p.result)}`).join(', ')}.`,
    '![hand-off](hot-key-hand-off.svg)\n\n![throughput](hot-key-throughput.svg)',
    '## 4. Memory',
    `${n0(results.memory.points.at(-1)?.cycles ?? 0)} withLock cycles (pg adapter) in one process; memory read after a forced GC${results.memory.gcExposed ? '' : ' (**gc not exposed: run with node --expose-gc**)'}. ` +
      `Heap change from the first checkpoint to the last: ${results.memory.heapBytesPerCycle.toFixed(2)} bytes per cycle; RSS change ${results.memory.rssGrowthMb.toFixed(1)} MB.`,
    table(
      ['cycles', 'RSS (MB)', 'heap used (MB)'],
      results.memory.points.map((p) => [n0(p.cycles), p.rssMb.toFixed(1), p.heapUsedMb.toFixed(2)]),
    ),
    '![memory](memory.svg)',
  ];
  return `${sections.join('\n\n')}\n`;
}

/**
 * The SVG charts, by file name.
 *
 * @example
 * ```ts
 * for (const [name, svg] of Object.entries(charts(results))) await writeFile(name, svg);
 * ```
 */
export function charts(results: BenchResults): Record<string, string> {
  const overheadBars: Bar[] = results.overhead.map((r) => ({
    label: `${r.adapter} · ${r.kind === 'alternative' ? 'lock' : r.kind}`,
    value: r.opsPerSec,
    series:
      r.kind === 'alternative'
        ? 'alternatives'
        : r.kind.startsWith('withLock')
          ? 'pglock'
          : 'hand-written / none',
  }));
  const hotBars = (pick: (r: HotKeyRow) => number): Bar[] =>
    results.hotKey.map((r) => ({
      label: `${r.design} × ${r.workers}`,
      value: pick(r),
      series: `${r.workers} workers`,
    }));
  return {
    'overhead.svg': barChart({
      title: 'Uncontended locked transactions',
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
  };
}
