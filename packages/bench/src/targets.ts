import { ORDER_TOLERANCE_US } from './hand-off.ts';
import type { HotKeyRow } from './hot-key.ts';
import type { OverheadRow } from './overhead.ts';

/** One target of issue 9, and what this run found. */
export interface TargetResult {
  readonly target: string;
  readonly met: boolean;
  readonly detail: string;
}

const PGLOCK = 'pglock withLock (pg)';
const pct = (ratio: number) => `${((ratio - 1) * 100).toFixed(1)}%`;
const ms = (value: number) => (Number.isFinite(value) ? `${value.toFixed(3)} ms` : 'n/a');

/**
 * Checks the four targets against the figures; a miss says by how much.
 *
 * @example
 * ```ts
 * for (const t of checkTargets(overhead, hotKey)) console.log(t.met, t.target);
 * ```
 */
export function checkTargets(overhead: readonly OverheadRow[], hotKey: readonly HotKeyRow[]): TargetResult[] {
  const locked = overhead.filter((r) => r.kind === 'withLock' || r.kind === 'withLock + timeoutMs');
  const offRoundTrips = locked.filter((r) => r.extraRoundTrips !== 1);
  // Prisma's withLock always has a timeout, so its timeoutMs row is its withLock row.
  const primary = locked.filter(
    (r) => r.kind === 'withLock' || !locked.some((o) => o.adapter === r.adapter && o.kind === 'withLock'),
  );
  const slow = primary.filter((r) => (r.vsSameOrm ?? 1) < 0.95);
  const slowTimeout = locked.filter((r) => r.kind === 'withLock + timeoutMs' && (r.vsSameOrm ?? 1) < 0.95);

  const pglock = hotKey.filter((r) => r.design === PGLOCK);
  const slowHandOff = pglock.filter((r) => !(r.handOffP50Ms < 1));
  const pollingRatios = pglock.map((r) => {
    const polling = hotKey.filter(
      (p) => p.polls && p.workers === r.workers && Number.isFinite(p.handOffP50Ms),
    );
    const fastest = Math.min(...polling.map((p) => p.handOffP50Ms));
    return { workers: r.workers, ratio: fastest / r.handOffP50Ms };
  });
  const notTenTimes = pollingRatios.filter((x) => !(x.ratio >= 10));
  const unfair = pglock.filter((r) => r.outOfOrderBeyondTolerance > 0);

  return [
    {
      target: '`withLock` adds exactly one round trip to a transaction, also with a timeout',
      met: offRoundTrips.length === 0,
      detail:
        offRoundTrips.length === 0
          ? `counted: +1 statement on every adapter, with and without timeoutMs (${locked.length} variants)`
          : offRoundTrips.map((r) => `${r.adapter} ${r.kind}: +${r.extraRoundTrips}`).join('; '),
    },
    {
      target: 'Throughput within 5% of hand-written SQL on the same ORM',
      met: slow.length === 0,
      detail: [
        slow.length === 0
          ? 'withLock within 5% on every adapter'
          : `missed: ${slow.map((r) => `${r.adapter} ${pct(r.vsSameOrm ?? 1)}`).join(', ')}`,
        slowTimeout.length === 0
          ? 'with timeoutMs: within 5%'
          : `with timeoutMs: ${slowTimeout.map((r) => `${r.adapter} ${pct(r.vsSameOrm ?? 1)}`).join(', ')}`,
      ].join('; '),
    },
    {
      target: 'Hot-key hand-off p50 under 1 ms on this machine, at least 10× faster than any polling design',
      met: slowHandOff.length === 0 && notTenTimes.length === 0,
      detail: [
        `p50: ${pglock.map((r) => `${r.workers} workers ${ms(r.handOffP50Ms)}`).join(', ')}`,
        `fastest polling design ÷ pglock: ${pollingRatios.map((x) => `${x.workers} workers ${Number.isFinite(x.ratio) ? `${x.ratio.toFixed(1)}×` : 'n/a'}`).join(', ')}`,
      ].join('; '),
    },
    {
      target: 'FIFO hand-off: no waiter overtaken by a later arrival',
      met: unfair.length === 0,
      detail: pglock
        .map(
          (r) =>
            `${r.workers} workers: ${(r.outOfOrderBeyondTolerance * 100).toFixed(2)}% overtook a waiter who arrived > ${ORDER_TOLERANCE_US / 1_000} ms earlier (${(r.outOfOrder * 100).toFixed(2)}% counting any earlier stamp)`,
        )
        .join('; '),
    },
  ];
}
