import { stamps } from './clock.ts';
import { BackendCpu, benchApplicationName, withApplicationName } from './cpu.ts';
import { alternatives } from './designs.ts';
import { median, type Spread, spread } from './stats.ts';
import { openSubjects, type SkippedSubject, type Subject, type VariantKind } from './subjects.ts';

/** One row of scenario 1: a variant at a number of concurrent loops. */
export interface OverheadRow {
  readonly adapter: string;
  readonly kind: VariantKind | 'alternative';
  readonly loops: number;
  /** Median operations per second over the rounds. */
  readonly opsPerSec: number;
  /**
   * Against the same ORM's hand-written lock at the same loops: the median of the per-round ratios.
   * For the batch kinds: against the hand-written lock batch. Undefined for alternatives.
   */
  readonly vsSameOrm: number | undefined;
  /** The least, median and greatest of those per-round ratios. */
  readonly vsSameOrmSpread: Spread | undefined;
  /** Against the same ORM's hand-written `SET LOCAL lock_timeout` + lock (median of per-round ratios). */
  readonly vsSetLocal: number | undefined;
  /** Against hand-written SQL on pg at the same loops (median ÷ median). */
  readonly vsPg: number;
  /**
   * Against the same ORM's hand-written lock with its work in an AsyncLocalStorage (the hooks' floor
   * of any design that nests by async context), median of per-round ratios; `withLock` kinds only.
   */
  readonly vsFloor: number | undefined;
  /** Statements this variant adds to the ORM's unlocked transaction (counted), when countable. */
  readonly extraRoundTrips: number | undefined;
  /** Client (the bench process) CPU µs per transaction: all rounds' CPU ÷ all rounds' transactions. */
  readonly clientUsPerOp: number;
  /** Server CPU µs per transaction, of the subject's backends; NaN when /proc is not readable. */
  readonly serverUsPerOp: number;
  /** Client and server CPU per transaction ÷ the same-ORM baseline's (the one of `vsSameOrm`). */
  readonly clientVsSameOrm: number | undefined;
  readonly serverVsSameOrm: number | undefined;
}

export interface OverheadResult {
  readonly rows: readonly OverheadRow[];
  readonly skipped: readonly SkippedSubject[];
  /** Why server CPU is not reported, when it is not. */
  readonly serverCpu: string | undefined;
}

export interface OverheadOptions {
  readonly url: string;
  /** Concurrent loops in the process, one run per entry (each on its own counter row). */
  readonly loopCounts: readonly number[];
  readonly rounds: number;
  readonly roundMs: number;
  readonly log: (line: string) => void;
}

interface Runnable {
  readonly adapter: string;
  readonly kind: VariantKind | 'alternative';
  /** The `application_name` of its connections. */
  readonly app: string;
  readonly run: (row: number, key: bigint) => Promise<unknown>;
}

/** What one timed window measured: transactions, seconds, and CPU on both ends. */
interface Window {
  readonly ops: number;
  readonly opsPerSec: number;
  readonly clientUs: number;
  readonly serverUs: number | undefined;
}

// Distinct keys: every operation of the run takes a key no other operation takes.
let nextKey = 1n << 40n;

/** Longer than the moment pglock's store stays enabled after its last callback (10 ms, core's nesting.ts). */
const SETTLE_MS = 25;

/**
 * Runs `loops` concurrent loops of `r` for `ms`: transactions per second, and the CPU this process
 * and `r`'s backends used meanwhile (`cpu` finds the backends before the window opens).
 */
async function throughput(r: Runnable, loops: number, ms: number, cpu: BackendCpu): Promise<Window> {
  // Every round starts with no store of pglock's enabled, as an app's other queries run: a
  // hand-written round right after a pglock round would otherwise pay its promise hooks.
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  const window = await cpu.start(r.app);
  let ops = 0;
  const start = performance.now();
  const until = start + ms;
  await Promise.all(
    Array.from({ length: loops }, async (_, loop) => {
      while (performance.now() < until) {
        await r.run(loop + 1, nextKey++);
        ops++;
      }
    }),
  );
  const seconds = (performance.now() - start) / 1_000;
  const used = await cpu.end(window);
  return { ops, opsPerSec: ops / seconds, ...used };
}

const BASELINE: Partial<Record<VariantKind, VariantKind>> = {
  '$lock batch': 'hand-written lock batch',
  '$lock batch + timeoutMs': 'hand-written lock batch',
  'hand-written lock batch': 'hand-written lock batch',
};

/** Statements per operation of each variant, minus the unlocked transaction's. */
async function countRoundTrips(subject: Subject): Promise<Map<VariantKind, number>> {
  const perOp = new Map<VariantKind, number>();
  for (const variant of subject.variants) {
    await variant.run(1, nextKey++); // connection, prepared statements, ORM caches
    const before = subject.statements();
    const n = 20;
    for (let i = 0; i < n; i++) await variant.run(1, nextKey++);
    perOp.set(variant.kind, (subject.statements() - before) / n);
  }
  const extra = new Map<VariantKind, number>();
  // A batch is a transaction too (BEGIN, its queries, COMMIT): the same baseline.
  for (const [kind, count] of perOp) extra.set(kind, count - (perOp.get('no lock') ?? 0));
  return extra;
}

/**
 * Scenario 1: uncontended transactions on distinct keys, every adapter and alternative, at each
 * number of concurrent loops, measured in interleaved rounds (the order rotates each round, so drift
 * in the machine's load hits every variant alike) and reported as medians; ratios are the median of
 * per-round ratios. Round trips are
 * counted on the adapters' own connections, one call at a time. CPU per transaction adds up every
 * round's CPU and transactions before dividing (the server's clock ticks are coarse for one round):
 * this process's `process.cpuUsage()` and the subject's backends' CPU from /proc (cpu.ts).
 *
 * @example
 * ```ts
 * const { rows } = await runOverhead({ url, loopCounts: [1, 4], rounds: 5, roundMs: 750, log: console.log });
 * ```
 */
export async function runOverhead(options: OverheadOptions): Promise<OverheadResult> {
  const { url, loopCounts, rounds, roundMs, log } = options;
  const connections = Math.max(...loopCounts);
  const app = (name: string) => benchApplicationName(`overhead/${name}`);
  const cpu = await BackendCpu.open(url);
  if (cpu.unavailable) log(`  server CPU n/a: ${cpu.unavailable}`);
  const opened = await openSubjects(url, connections, (u, name) => withApplicationName(u, app(name)));
  const subjects = opened.filter((s): s is Subject => 'variants' in s);
  const skipped = opened.filter((s): s is SkippedSubject => 'skipped' in s);
  for (const s of skipped) log(`  skipped ${s.name}: ${s.skipped}`);
  const sessions = await Promise.all(
    alternatives.map((design) => design.open(withApplicationName(url, app(design.name)), connections)),
  );
  try {
    const runnables: Runnable[] = [
      ...subjects.flatMap((subject) =>
        subject.variants.map((variant) => ({
          adapter: subject.name,
          kind: variant.kind,
          app: app(subject.name),
          run: variant.run,
        })),
      ),
      ...alternatives.map((design, i) => ({
        adapter: design.name,
        kind: 'alternative' as const,
        app: app(design.name),
        run: (row: number, key: bigint) => sessions[i]!.cycle(row, key, stamps()),
      })),
    ];

    const extra = new Map<string, number>();
    for (const subject of subjects) {
      for (const [kind, n] of await countRoundTrips(subject)) extra.set(`${subject.name}|${kind}`, n);
      log(`  round trips counted: ${subject.name}`);
    }

    const rows: OverheadRow[] = [];
    for (const loops of loopCounts) {
      // The alternatives are far from pglock's figures and only shown at the largest loop count.
      const measured = loops === connections ? runnables : runnables.filter((r) => r.kind !== 'alternative');
      const samples = new Map<Runnable, number[]>(measured.map((r) => [r, []]));
      const windows = new Map<Runnable, Window[]>(measured.map((r) => [r, []]));
      for (const r of measured) await throughput(r, loops, Math.max(200, roundMs), cpu); // warm-up
      // One adapter's variants run one after another, so a ratio compares figures taken seconds
      // apart; the order of the adapters and, within each, of its variants rotates every round.
      const groups = [...new Set(measured.map((r) => r.adapter))].map((adapter) =>
        measured.filter((r) => r.adapter === adapter),
      );
      const rotate = <T>(list: readonly T[], by: number) => list.map((_, i) => list[(i + by) % list.length]!);
      for (let round = 0; round < rounds; round++) {
        for (const group of rotate(groups, round)) {
          for (const r of rotate(group, round)) {
            const w = await throughput(r, loops, roundMs, cpu);
            samples.get(r)!.push(w.opsPerSec);
            windows.get(r)!.push(w);
          }
        }
        log(`  ${loops} loop(s): round ${round + 1}/${rounds} done`);
      }
      const ops = (r: Runnable | undefined) => (r === undefined ? Number.NaN : median(samples.get(r)!));
      // The median of the per-round ratios: each round's figure against the same round's baseline.
      const versus = (r: Runnable, base: Runnable | undefined): Spread | undefined => {
        if (base === undefined) return undefined;
        const mine = samples.get(r)!;
        const theirs = samples.get(base)!;
        return spread(mine.map((v, i) => v / theirs[i]!));
      };
      const find = (adapter: string, kind: VariantKind) =>
        measured.find((r) => r.adapter === adapter && r.kind === kind);
      const pgBaseline = ops(find('pg', 'hand-written lock'));
      // CPU per transaction over all rounds: Σ CPU ÷ Σ transactions.
      const perOp = (r: Runnable | undefined, pick: (w: Window) => number | undefined) => {
        const ws = r === undefined ? [] : windows.get(r)!;
        const total = ws.reduce((sum, w) => sum + w.ops, 0);
        if (ws.some((w) => pick(w) === undefined) || total === 0) return Number.NaN;
        return ws.reduce((sum, w) => sum + pick(w)!, 0) / total;
      };
      const client = (r: Runnable | undefined) => perOp(r, (w) => w.clientUs);
      const server = (r: Runnable | undefined) => perOp(r, (w) => w.serverUs);
      for (const r of measured) {
        const own = r.kind === 'alternative' ? undefined : r.kind;
        const same = own === undefined ? undefined : find(r.adapter, BASELINE[own] ?? 'hand-written lock');
        const setLocal = own === undefined ? undefined : find(r.adapter, 'hand-written SET LOCAL + lock');
        const sameSpread = versus(r, same);
        const setLocalSpread = own?.includes('batch') ? undefined : versus(r, setLocal);
        const floor = own?.startsWith('withLock')
          ? find(r.adapter, 'hand-written lock, work in an AsyncLocalStorage')
          : undefined;
        rows.push({
          adapter: r.adapter,
          kind: r.kind,
          loops,
          opsPerSec: ops(r),
          vsSameOrm: sameSpread?.median,
          vsSameOrmSpread: sameSpread,
          vsSetLocal: setLocalSpread?.median,
          vsPg: ops(r) / pgBaseline,
          vsFloor: versus(r, floor)?.median,
          extraRoundTrips: extra.get(`${r.adapter}|${r.kind}`),
          clientUsPerOp: client(r),
          serverUsPerOp: server(r),
          clientVsSameOrm: same === undefined ? undefined : client(r) / client(same),
          serverVsSameOrm: same === undefined ? undefined : server(r) / server(same),
        });
      }
    }
    return { rows, skipped, serverCpu: cpu.unavailable };
  } finally {
    await Promise.all([...subjects.map((s) => s.close()), ...sessions.map((s) => s.close()), cpu.close()]);
  }
}
