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
  /** Every hand-off (ms), ascending. */
  readonly handOffsMs: readonly number[];
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
  for (const c of cycles) {
    const list = perWorker.get(c.worker);
    if (list === undefined) perWorker.set(c.worker, [c]);
    else list.push(c);
  }
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
    handOffsMs: handOffs,
    maxWaitMs: Math.max(0, ...cycles.map((c) => (c.acquired - c.arrival) / 1_000)),
    outOfOrder: outOfOrder / n,
    outOfOrderBeyondTolerance: beyond / n,
    overlaps,
  };
}

/** The index of the last cycle of `list` (sorted by arrival) that arrived by `t`, or -1. */
function lastArrivedBy(list: readonly Cycle[], t: number): number {
  let lo = 0;
  let hi = list.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid]!.arrival <= t) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/** One look at the server's waiters for the hot key: who waited since when, and when we asked. */
export interface WaitObservation {
  /** When the query was sent and when its answer arrived (µs, the shared monotonic clock). */
  readonly sent: number;
  readonly answered: number;
  /** Backend pid → `pg_locks.waitstart` (µs since the epoch, the server's clock). */
  readonly waits: readonly (readonly [number, number])[];
}

/** FIFO as the server saw it: arrival order from `pg_locks.waitstart`, grant order from the holders. */
export interface ServerOrder {
  /** Cycles whose wait the monitor saw (so whose server arrival is known), share of all. */
  readonly seen: number;
  /** Of those, the share granted while a waiter with an earlier `waitstart` still waited. */
  readonly outOfOrder: number;
  /** The same, counting only waiters whose `waitstart` is more than {@link ORDER_TOLERANCE_US} earlier. */
  readonly outOfOrderBeyondTolerance: number;
  /** The largest such inversion: how much earlier the overtaken waiter's `waitstart` was (ms). */
  readonly largestInversionMs: number;
}

/**
 * Reads FIFO from the server's own order. A cycle gets the `waitstart` of an observation of its
 * worker's backend taken while that cycle waited (the observation's query overlaps the cycle's
 * arrival-to-grant span; observations that could belong to two cycles are dropped). Grants are in
 * holder order, which the cycles' acquisition stamps give exactly (one holder at a time). A cycle is
 * out of order when a cycle with an earlier `waitstart` was granted after it. PostgreSQL stamps
 * `waitstart` just after a backend has joined the lock's wait queue (when its deadlock timer starts),
 * so two backends that join within one scheduling delay of each other can carry stamps in the
 * opposite order of their places in the queue; the tolerant share leaves those out.
 *
 * @example
 * ```ts
 * const order = serverOrder(cycles, new Map([[0, 4242]]), observations);
 * ```
 */
export function serverOrder(
  cycles: readonly Cycle[],
  pidOf: ReadonlyMap<number, number>,
  observations: readonly WaitObservation[],
): ServerOrder {
  const byPid = new Map<number, Cycle[]>();
  for (const c of cycles) {
    const pid = pidOf.get(c.worker);
    if (pid === undefined) continue;
    const list = byPid.get(pid) ?? [];
    list.push(c);
    byPid.set(pid, list);
  }
  for (const list of byPid.values()) list.sort((a, b) => a.arrival - b.arrival);
  const waitstart = new Map<Cycle, number>();
  const conflicted = new Set<Cycle>();
  for (const o of observations) {
    for (const [pid, ws] of o.waits) {
      // A worker's cycles follow one another: only the last to arrive by the answer, or the one
      // before it, can overlap the observation.
      const list = byPid.get(pid) ?? [];
      const last = lastArrivedBy(list, o.answered);
      const candidates = [list[last - 1], list[last]].filter(
        (c): c is Cycle => c !== undefined && c.acquired >= o.sent,
      );
      if (candidates.length !== 1) continue;
      const cycle = candidates[0]!;
      const known = waitstart.get(cycle);
      if (known !== undefined && known !== ws) conflicted.add(cycle);
      else waitstart.set(cycle, ws);
    }
  }
  for (const c of conflicted) waitstart.delete(c);
  const known = [...waitstart].sort(([a], [b]) => b.acquired - a.acquired);
  let earliestLater = Number.POSITIVE_INFINITY;
  let outOfOrder = 0;
  let beyond = 0;
  let largest = 0;
  for (const [, ws] of known) {
    if (earliestLater < ws) {
      outOfOrder++;
      largest = Math.max(largest, ws - earliestLater);
      if (ws - earliestLater > ORDER_TOLERANCE_US) beyond++;
    }
    earliestLater = Math.min(earliestLater, ws);
  }
  const share = (n: number) => (known.length === 0 ? Number.NaN : n / known.length);
  return {
    seen: cycles.length === 0 ? 0 : known.length / cycles.length,
    outOfOrder: share(outOfOrder),
    outOfOrderBeyondTolerance: share(beyond),
    largestInversionMs: largest / 1_000,
  };
}
