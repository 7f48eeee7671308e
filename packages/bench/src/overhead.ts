import { stamps } from './clock.ts';
import { alternatives } from './designs.ts';
import { openSubjects, type VariantKind } from './subjects.ts';

/** One row of scenario 1. */
export interface OverheadRow {
  readonly adapter: string;
  readonly kind: VariantKind | 'alternative';
  /** Median operations per second over the rounds. */
  readonly opsPerSec: number;
  /** Against the same ORM's hand-written lock (the 5% target); undefined for alternatives. */
  readonly vsSameOrm: number | undefined;
  /** Against hand-written SQL on pg. */
  readonly vsPg: number;
  /** Statements this variant adds to the ORM's unlocked transaction (counted), when countable. */
  readonly extraRoundTrips: number | undefined;
}

export interface OverheadOptions {
  readonly url: string;
  readonly loops: number;
  readonly rounds: number;
  readonly roundMs: number;
  readonly log: (line: string) => void;
}

interface Runnable {
  readonly adapter: string;
  readonly kind: VariantKind | 'alternative';
  readonly run: (row: number, key: bigint) => Promise<unknown>;
}

// Distinct keys: every operation of the run takes a key no other operation takes.
let nextKey = 1n << 40n;

/** Runs `loops` concurrent loops of `run` for `ms` and returns operations per second. */
async function throughput(run: Runnable['run'], loops: number, ms: number): Promise<number> {
  let ops = 0;
  const start = performance.now();
  const until = start + ms;
  await Promise.all(
    Array.from({ length: loops }, async (_, loop) => {
      while (performance.now() < until) {
        await run(loop + 1, nextKey++);
        ops++;
      }
    }),
  );
  return ops / ((performance.now() - start) / 1_000);
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * Scenario 1: uncontended transactions on distinct keys, every adapter and alternative, measured in
 * interleaved rounds (so drift in the machine's load hits every variant alike) and reported as the
 * median. Round trips are counted on the adapters' own connections, sequentially.
 *
 * @example
 * ```ts
 * const rows = await runOverhead({ url, loops: 4, rounds: 3, roundMs: 1_000, log: console.log });
 * ```
 */
export async function runOverhead(options: OverheadOptions): Promise<OverheadRow[]> {
  const { url, loops, rounds, roundMs, log } = options;
  const subjects = openSubjects(url, loops);
  const sessions = await Promise.all(alternatives.map((design) => design.open(url, loops)));
  try {
    const runnables: Runnable[] = [
      ...subjects.flatMap((subject) =>
        subject.variants.map((variant) => ({ adapter: subject.name, kind: variant.kind, run: variant.run })),
      ),
      ...alternatives.map((design, i) => ({
        adapter: design.name,
        kind: 'alternative' as const,
        run: (row: number, key: bigint) => sessions[i]!.cycle(row, key, stamps()),
      })),
    ];

    const extra = new Map<Runnable, number>();
    for (const subject of subjects) {
      const perOp = new Map<VariantKind, number>();
      for (const variant of subject.variants) {
        await variant.run(1, nextKey++); // connection, prepared statements, ORM caches
        const before = subject.statements();
        const n = 20;
        for (let i = 0; i < n; i++) await variant.run(1, nextKey++);
        perOp.set(variant.kind, (subject.statements() - before) / n);
      }
      const base = perOp.get('no lock') ?? 0;
      for (const r of runnables.filter((r) => r.adapter === subject.name)) {
        extra.set(r, (perOp.get(r.kind as VariantKind) ?? 0) - base);
      }
      log(`  round trips counted: ${subject.name}`);
    }

    const samples = new Map<Runnable, number[]>(runnables.map((r) => [r, []]));
    for (const r of runnables) await throughput(r.run, loops, Math.min(200, roundMs / 2)); // warm-up
    for (let round = 0; round < rounds; round++) {
      // Rotate the order each round so no variant always runs right after the same neighbour.
      const order = runnables.map((_, i) => runnables[(i + round) % runnables.length]!);
      for (const r of order) samples.get(r)!.push(await throughput(r.run, loops, roundMs));
      log(`  round ${round + 1}/${rounds} done`);
    }

    const ops = (r: Runnable) => median(samples.get(r)!);
    const handWritten = (adapter: string) =>
      runnables.find((r) => r.adapter === adapter && r.kind === 'hand-written lock');
    const pgBaseline = ops(handWritten('pg')!);
    return runnables.map((r) => {
      const same = r.kind === 'alternative' ? undefined : handWritten(r.adapter);
      return {
        adapter: r.adapter,
        kind: r.kind,
        opsPerSec: ops(r),
        vsSameOrm: same ? ops(r) / ops(same) : undefined,
        vsPg: ops(r) / pgBaseline,
        extraRoundTrips: extra.get(r),
      };
    });
  } finally {
    await Promise.all([...subjects.map((s) => s.close()), ...sessions.map((s) => s.close())]);
  }
}
