import { ORDER_TOLERANCE_US } from './hand-off.ts';
import type { BenchResults } from './report.ts';

/** One target of the performance issue, and what this run found. */
export interface TargetResult {
  readonly target: string;
  readonly met: boolean;
  readonly detail: string;
}

const PGLOCK = 'pglock withLock (pg)';
const x = (ratio: number | undefined) =>
  ratio === undefined || !Number.isFinite(ratio) ? 'n/a' : `${ratio.toFixed(2)}×`;
const ms = (value: number) => (Number.isFinite(value) ? `${value.toFixed(3)} ms` : 'n/a');
const us = (value: number) => `${value.toFixed(2)} µs`;
/** Scenario 5's burst may take this much longer than the hand-written one and count as "no slower". */
export const BURST_TOLERANCE = 1.02;

/**
 * Checks the targets against the figures; each says met or missed, with the ratio.
 *
 * @example
 * ```ts
 * for (const t of checkTargets(results)) console.log(t.met, t.target, t.detail);
 * ```
 */
export function checkTargets(results: BenchResults): TargetResult[] {
  const { micro, overhead, hotKey, starvation } = results;
  const rows = overhead.rows;
  const label = (r: (typeof rows)[number]) => `${r.adapter} ${r.loops}×`;
  const list = (
    picked: readonly (typeof rows)[number][],
    ratio: (r: (typeof rows)[number]) => number | undefined,
  ) => picked.map((r) => `${label(r)} ${x(ratio(r))}`).join(', ');
  const judged = (
    name: string,
    picked: readonly (typeof rows)[number][],
    ratio: (r: (typeof rows)[number]) => number | undefined,
    min: number,
  ): TargetResult => {
    const below = picked.filter((r) => !((ratio(r) ?? 0) >= min));
    return {
      target: name,
      met: picked.length > 0 && below.length === 0,
      detail:
        picked.length === 0
          ? 'no figures'
          : below.length === 0
            ? `met: ${list(picked, ratio)}`
            : `missed: ${list(below, ratio)} (met: ${
                list(
                  picked.filter((r) => !below.includes(r)),
                  ratio,
                ) || 'none'
              })`,
    };
  };
  const skipped = overhead.skipped.map((s) => `${s.name} skipped (${s.skipped})`).join('; ');
  const withSkips = (t: TargetResult): TargetResult =>
    skipped ? { ...t, met: false, detail: `${t.detail}; ${skipped}` } : t;

  const locked = rows.filter((r) => r.kind === 'withLock' || r.kind === 'withLock + timeoutMs');
  const offRoundTrips = locked.filter((r) => r.loops === rows[0]?.loops && r.extraRoundTrips !== 1);
  const plain = rows.filter((r) => r.kind === 'withLock');
  const timed = rows.filter((r) => r.kind === 'withLock + timeoutMs');
  const batch = rows.filter((r) => r.kind === '$lock batch');
  const ownUs = Math.max(micro.withLockNameUs, micro.withLockBigintUs) - micro.handWrittenUs;

  const comparisons = hotKey.comparisons.filter((c) => c.loops === 1);
  const slowHot = comparisons.filter((c) => !(c.handOff.median >= 0.9 && c.throughput.median >= 0.9));
  const pglockHot = hotKey.rows.filter((r) => r.design === PGLOCK && r.loops === 1);
  const unfair = pglockHot.filter(
    (r) => r.server === undefined || !(r.server.outOfOrderBeyondTolerance === 0),
  );
  const pglockStarve = starvation.find((s) => s.design.startsWith('pglock'));
  const handStarve = starvation.find((s) => !s.design.startsWith('pglock'));
  const burstRatio = pglockStarve && handStarve ? pglockStarve.burstMs / handStarve.burstMs : Number.NaN;
  const withLockRow = (adapter: string, loops: number) =>
    rows.find((r) => r.adapter === adapter && r.loops === loops && r.kind === 'withLock + timeoutMs');

  return [
    withSkips(
      judged(
        '`withLock` ≥ 0.95× hand-written lock on the same ORM, 1 and 4 loops',
        plain,
        (r) => r.vsSameOrm,
        0.95,
      ),
    ),
    {
      target: 'pglock’s own JavaScript per `withLock` ≤ 3 µs (micro-benchmark, no database)',
      met: ownUs <= 3,
      detail: `${ownUs <= 3 ? 'met' : 'missed'}: name key +${us(micro.withLockNameUs - micro.handWrittenUs)}, bigint key +${us(micro.withLockBigintUs - micro.handWrittenUs)} over the hand-written sequence (${us(micro.handWrittenUs)})`,
    },
    withSkips(
      judged(
        '`withLock` + `timeoutMs` ≥ 0.90× the untimed hand-written lock',
        timed,
        (r) => r.vsSameOrm,
        0.9,
      ),
    ),
    withSkips(
      judged(
        '`withLock` + `timeoutMs` ≥ 1.0× hand-written `SET LOCAL lock_timeout` + lock',
        timed,
        (r) => r.vsSetLocal,
        1,
      ),
    ),
    {
      target: '`withLock` adds exactly one round trip to a transaction, also with a timeout',
      met: locked.length > 0 && offRoundTrips.length === 0,
      detail:
        offRoundTrips.length === 0
          ? `counted: +1 statement on every adapter, with and without timeoutMs (${locked.filter((r) => r.loops === rows[0]?.loops).length} variants)`
          : offRoundTrips.map((r) => `${r.adapter} ${r.kind}: +${r.extraRoundTrips}`).join('; '),
    },
    {
      target:
        'Pool not starved: 100 `withLock` on one key (20 ms each), pool of 10: `SELECT 1` p99 ≤ 20 ms, burst no slower',
      met: (pglockStarve?.probeP99Ms ?? Number.POSITIVE_INFINITY) <= 20 && burstRatio <= BURST_TOLERANCE,
      detail: `SELECT 1 p99 ${ms(pglockStarve?.probeP99Ms ?? Number.NaN)} (every waiter on the server: ${ms(handStarve?.probeP99Ms ?? Number.NaN)}); burst ${x(burstRatio)} the hand-written burst (tolerance ${BURST_TOLERANCE}×)`,
    },
    {
      target:
        'Hot key: hand-off and throughput ≥ 0.9× hand-written (median of per-round ratios) at 2, 8, 32 workers',
      met: comparisons.length > 0 && slowHot.length === 0,
      detail: comparisons
        .map(
          (c) =>
            `${c.workers} workers: throughput ${x(c.throughput.median)} (${x(c.throughput.min)}–${x(c.throughput.max)}), hand-off ${x(c.handOff.median)} (${x(c.handOff.min)}–${x(c.handOff.max)})`,
        )
        .join('; '),
    },
    {
      target:
        'Hot key FIFO as the server saw it (`pg_locks.waitstart`): no waiter granted after a later arrival',
      met: pglockHot.length > 0 && unfair.length === 0,
      detail: pglockHot
        .map((r) =>
          r.server === undefined
            ? `${r.workers} workers: not measured`
            : `${r.workers} workers: ${(r.server.outOfOrderBeyondTolerance * 100).toFixed(2)}% overtook a waiter whose waitstart was > ${ORDER_TOLERANCE_US / 1_000} ms earlier (${(r.server.outOfOrder * 100).toFixed(2)}% counting any earlier waitstart, largest ${r.server.largestInversionMs.toFixed(3)} ms; ${(r.server.seen * 100).toFixed(0)}% of waits seen)`,
        )
        .join('; '),
    },
    {
      target: 'Prisma `$transaction([$lock(…), …])` ≥ 0.95× the same batch with a hand-written lock',
      met: batch.length > 0 && batch.every((r) => (r.vsSameOrm ?? 0) >= 0.95),
      detail:
        batch.length === 0
          ? `no figures${skipped ? `; ${skipped}` : ''}`
          : batch
              .map((r) => {
                const interactive = withLockRow(r.adapter, r.loops);
                return `${r.loops}×: ${x(r.vsSameOrm)}; ${x(interactive ? r.opsPerSec / interactive.opsPerSec : undefined)} the ops/s of $withLock + timeoutMs`;
              })
              .join('; '),
    },
    {
      target: 'Hot-key hand-off p50 under 1 ms, at least 10× faster than any polling design',
      met:
        pglockHot.length > 0 &&
        pglockHot.every((r) => r.handOffP50Ms < 1 && pollingRatio(hotKey.rows, r) >= 10),
      detail: pglockHot
        .map(
          (r) =>
            `${r.workers} workers ${ms(r.handOffP50Ms)} (fastest polling ÷ pglock ${x(pollingRatio(hotKey.rows, r))})`,
        )
        .join('; '),
    },
  ];
}

function pollingRatio(
  rows: BenchResults['hotKey']['rows'],
  pglock: BenchResults['hotKey']['rows'][number],
): number {
  const polling = rows.filter(
    (p) => p.polls && p.workers === pglock.workers && Number.isFinite(p.handOffP50Ms),
  );
  return Math.min(...polling.map((p) => p.handOffP50Ms)) / pglock.handOffP50Ms;
}
