/** One lock cycle of one worker, in µs on the shared monotonic clock. */
export interface Cycle {
  readonly worker: number;
  readonly arrival: number;
  readonly acquired: number;
  readonly released: number;
}

/** What one hot-key run measured. */
export interface HotKeyStats {
  readonly acquisitions: number;
  readonly opsPerSec: number;
  /** From a release that found others waiting to the first of them holding the lock (ms). */
  readonly handOffP50Ms: number;
  readonly handOffP99Ms: number;
  readonly handOffs: number;
  /** Longest time from arrival to acquire (ms). */
  readonly maxWaitMs: number;
  /** Acquisitions that went ahead of a waiter who arrived earlier (share of all). */
  readonly outOfOrder: number;
  /** The same, counting only waiters who arrived more than {@link ORDER_TOLERANCE_US} earlier. */
  readonly outOfOrderBeyondTolerance: number;
  /** Two holders at once (cycles overlapping): must be 0 for a lock. */
  readonly overlaps: number;
}

/**
 * Arrival stamps are taken in the client just before the lock request is written; two requests a
 * few hundred µs apart can reach the server in either order when the OS schedules the processes
 * differently. Overtakes by less than this are reported separately from real departures from FIFO.
 */
export const ORDER_TOLERANCE_US = 1_000;

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** The last cycle of `list` (sorted by arrival) that arrived before `t`. */
function pendingAt(list: readonly Cycle[], t: number): Cycle | undefined {
  let lo = 0;
  let hi = list.length - 1;
  let found: Cycle | undefined;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid]!.arrival < t) {
      found = list[mid];
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/**
 * Throughput, hand-off latency and fairness of one run.
 *
 * @example
 * ```ts
 * const stats = analyse(cycles, 2_000);
 * console.log(stats.handOffP50Ms);
 * ```
 */
export function analyse(cycles: readonly Cycle[], durationMs: number): HotKeyStats {
  const byAcquire = [...cycles].sort((a, b) => a.acquired - b.acquired);
  const perWorker = new Map<number, Cycle[]>();
  for (const c of cycles) perWorker.set(c.worker, [...(perWorker.get(c.worker) ?? []), c]);
  for (const list of perWorker.values()) list.sort((a, b) => a.arrival - b.arrival);
  // The cycles of other workers that were waiting at time t (at most one per worker).
  const waitingAt = (t: number, except: number): Cycle[] =>
    [...perWorker]
      .filter(([worker]) => worker !== except)
      .map(([, list]) => pendingAt(list, t))
      .filter((w): w is Cycle => w !== undefined && w.acquired > t);

  // A hand-off is timed from each release that found other workers waiting to the first of those
  // waiters getting the lock. The releaser taking it again meanwhile (what polling designs let
  // happen) does not end the hand-off: the waiters are still waiting.
  const handOffs: number[] = [];
  let overlaps = 0;
  for (let i = 1; i < byAcquire.length; i++) {
    if (byAcquire[i]!.acquired < byAcquire[i - 1]!.released) overlaps++;
  }
  for (const r of byAcquire) {
    const waiters = waitingAt(r.released, r.worker);
    if (waiters.length > 0) handOffs.push((Math.min(...waiters.map((w) => w.acquired)) - r.released) / 1_000);
  }
  handOffs.sort((a, b) => a - b);

  let outOfOrder = 0;
  let beyond = 0;
  for (const v of byAcquire) {
    const overtaken = waitingAt(v.acquired, v.worker).filter((w) => w.arrival < v.arrival);
    if (overtaken.length > 0) outOfOrder++;
    if (overtaken.some((w) => v.arrival - w.arrival > ORDER_TOLERANCE_US)) beyond++;
  }

  const n = cycles.length || 1;
  return {
    acquisitions: cycles.length,
    opsPerSec: cycles.length / (durationMs / 1_000),
    handOffP50Ms: percentile(handOffs, 50),
    handOffP99Ms: percentile(handOffs, 99),
    handOffs: handOffs.length,
    maxWaitMs: Math.max(0, ...cycles.map((c) => (c.acquired - c.arrival) / 1_000)),
    outOfOrder: outOfOrder / n,
    outOfOrderBeyondTolerance: beyond / n,
    overlaps,
  };
}
