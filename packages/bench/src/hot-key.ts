import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { nowUs, sleep } from './clock.ts';
import { BackendCpu, benchApplicationName, withApplicationName } from './cpu.ts';
import { HOT_KEY, HOT_ROW } from './database.ts';
import { designs } from './designs.ts';
import {
  analyse,
  type Cycle,
  type HotKeyStats,
  type ServerOrder,
  serverOrder,
  type WaitObservation,
} from './hand-off.ts';
import type { ToParent, ToWorker } from './hot-key-messages.ts';
import { median, type Spread, spread } from './stats.ts';

/** One row of scenarios 2 and 3: a design at a worker count (all its rounds together). */
export interface HotKeyRow extends HotKeyStats {
  readonly design: string;
  readonly polls: boolean;
  readonly workers: number;
  /** Callers per worker process (1 across processes; more: the in-process rows). */
  readonly loops: number;
  readonly rounds: number;
  readonly errors: number;
  /** FIFO from `pg_locks.waitstart`, for the designs that wait on one advisory lock per process. */
  readonly server: ServerOrder | undefined;
  /** Client CPU µs per granted lock: every worker's CPU over its window ÷ the grants of all rounds. */
  readonly clientUsPerGrant: number;
  /** Server CPU µs per granted lock, of the workers' backends (NaN when /proc is not readable). */
  readonly serverUsPerGrant: number;
}

/** pglock against its hand-written SQL, round by round, at one worker count. */
export interface HotKeyComparison {
  readonly workers: number;
  readonly loops: number;
  /** Per round: hand-written hand-off p50 ÷ pglock's (≥ 1: pglock hands off as fast or faster). */
  readonly handOff: Spread;
  /** Per round: pglock throughput ÷ hand-written. */
  readonly throughput: Spread;
  /** pglock's client and server CPU per grant ÷ hand-written's (all rounds together). */
  readonly clientCpu: number;
  readonly serverCpu: number;
}

export interface HotKeyResult {
  readonly rows: readonly HotKeyRow[];
  readonly comparisons: readonly HotKeyComparison[];
  /** Why server CPU is not reported, when it is not. */
  readonly serverCpu: string | undefined;
}

export interface HotKeyOptions {
  readonly url: string;
  readonly workerCounts: readonly number[];
  /** Rounds of pglock against hand-written per worker count, alternating which goes first. */
  readonly rounds: number;
  readonly roundMs: number;
  /** How long each alternative runs once per worker count. */
  readonly alternativeMs: number;
  /** Callers in the one process of the in-process rows. */
  readonly inProcessLoops: number;
  readonly log: (line: string) => void;
}

const workerPath = fileURLToPath(new URL('./hot-key-worker.ts', import.meta.url));
const PGLOCK = 0;
const HAND_WRITTEN = 1;
const KEY_CLASSID = Number(HOT_KEY >> 32n);
const KEY_OBJID = Number(HOT_KEY & 0xffffffffn);
/** Pause between two looks at `pg_locks`: often enough to see most waits, light on a small machine. */
const MONITOR_PAUSE_MS = 1;

class Worker {
  readonly #child: ChildProcess;
  readonly #inbox: ToParent[] = [];
  #wake: (() => void) | undefined;
  #stderr = '';

  constructor(execArgv: readonly string[]) {
    this.#child = fork(workerPath, [], {
      execArgv: [...execArgv],
      stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
    });
    this.#child.stderr?.on('data', (chunk) => {
      this.#stderr += String(chunk);
    });
    this.#child.on('message', (message: ToParent) => {
      this.#inbox.push(message);
      this.#wake?.();
    });
    this.#child.on('exit', () => this.#wake?.());
  }

  send(message: ToWorker): void {
    this.#child.send(message);
  }

  /** The next message of `type`; a `failed` message or an exit rejects. */
  async next<T extends ToParent['type']>(type: T): Promise<Extract<ToParent, { type: T }>> {
    for (;;) {
      const index = this.#inbox.findIndex((m) => m.type === type || m.type === 'failed');
      if (index >= 0) {
        const [message] = this.#inbox.splice(index, 1);
        if (message?.type === 'failed') throw new Error(`hot-key worker failed: ${message.error}`);
        return message as Extract<ToParent, { type: T }>;
      }
      if (this.#child.exitCode !== null) throw new Error(`hot-key worker exited:\n${this.#stderr}`);
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
    }
  }

  kill(): void {
    this.#child.kill();
  }
}

/** Looks at the hot key's waiters in `pg_locks` until stopped, from a connection of its own. */
class WaitMonitor {
  readonly #client: pg.Client;
  #running: Promise<WaitObservation[]> | undefined;
  #stop = false;

  constructor(url: string) {
    this.#client = new pg.Client({ connectionString: url });
    this.#client.on('error', () => undefined);
  }

  async connect(): Promise<void> {
    await this.#client.connect();
  }

  start(): void {
    this.#stop = false;
    this.#running = (async () => {
      const observations: WaitObservation[] = [];
      while (!this.#stop) {
        const sent = nowUs();
        const { rows } = await this.#client.query<{ pid: number; ws: string }>(
          `SELECT pid, (extract(epoch FROM waitstart) * 1000000)::bigint::text AS ws FROM pg_locks
            WHERE locktype = 'advisory' AND NOT granted AND waitstart IS NOT NULL
              AND objsubid = 1 AND classid = $1::oid AND objid = $2::oid`,
          [KEY_CLASSID, KEY_OBJID],
        );
        const answered = nowUs();
        if (rows.length > 0) {
          observations.push({ sent, answered, waits: rows.map((r) => [r.pid, Number(r.ws)] as const) });
        }
        await sleep(MONITOR_PAUSE_MS);
      }
      return observations;
    })();
  }

  async stop(): Promise<WaitObservation[]> {
    this.#stop = true;
    return (await this.#running) ?? [];
  }

  end(): Promise<void> {
    return this.#client.end();
  }
}

/** Σ share × seen cycles over the runs: a share of all seen cycles once divided by their count. */
function weighSeen(
  orders: readonly ServerOrder[],
  runs: readonly RunResult[],
  share: (o: ServerOrder) => number,
): number {
  return orders.reduce((sum, o, i) => {
    const value = share(o);
    return sum + (Number.isNaN(value) ? 0 : value * o.seen * runs[i]!.cycles.length);
  }, 0);
}

interface RunResult {
  readonly cycles: Cycle[];
  readonly pids: Map<number, number>;
  readonly observations: WaitObservation[];
  readonly errors: number;
  readonly ms: number;
  /** Every lock cycle the workers finished (the grants CPU is divided by). */
  readonly grants: number;
  readonly clientUs: number;
  readonly serverUs: number | undefined;
}

/**
 * Scenarios 2 and 3: the designs on one key with 2, 8 and 32 worker processes, plus one process of
 * several callers (the in-process rows: pglock's in-memory queue against every caller waiting on the
 * server). pglock and its hand-written SQL alternate round by round; each alternative runs once per
 * worker count. A monitor reads the server's wait order from `pg_locks` throughout. The workers are
 * forked once and reused (starting 32 TypeScript processes costs seconds of CPU).
 *
 * @example
 * ```ts
 * const result = await runHotKey({ url, workerCounts: [2, 8, 32], rounds: 5, roundMs: 1_000, alternativeMs: 2_000, inProcessLoops: 8, log: console.log });
 * ```
 */
export async function runHotKey(options: HotKeyOptions): Promise<HotKeyResult> {
  const { url, workerCounts, rounds, roundMs, alternativeMs, inProcessLoops, log } = options;
  // The workers resolve packages the way this process does (built output, or source with the condition).
  const execArgv = [...process.execArgv.filter((arg) => arg.startsWith('--conditions')), '--import', 'tsx'];
  const workers = Array.from({ length: Math.max(...workerCounts) }, () => new Worker(execArgv));
  const monitor = new WaitMonitor(url);
  await monitor.connect();
  // The workers' connections carry one application name, so their backends' CPU can be read.
  const app = benchApplicationName('hot-key');
  const tagged = withApplicationName(url, app);
  const cpu = await BackendCpu.open(url);

  const runOnce = async (design: number, count: number, loops: number, ms: number): Promise<RunResult> => {
    const active = workers.slice(0, count);
    for (const [worker, w] of active.entries()) w.send({ type: 'open', design, url: tagged, worker, loops });
    const ready = await Promise.all(active.map((w) => w.next('ready')));
    const window = await cpu.start(app);
    const startAt = nowUs() + 50_000;
    const until = startAt + ms * 1_000;
    monitor.start();
    for (const w of active) w.send({ type: 'go', startAt, until, key: String(HOT_KEY), row: HOT_ROW });
    const results = await Promise.all(active.map((w) => w.next('done')));
    const used = await cpu.end(window);
    const observations = await monitor.stop();
    for (const w of active) w.send({ type: 'close' });
    await Promise.all(active.map((w) => w.next('closed')));
    // Each caller is its own "worker" in the analysis: worker × 100 + loop.
    const cycles: Cycle[] = results.flatMap((r, worker) =>
      r.cycles
        .filter(([, , acquired]) => acquired <= until)
        .map(([loop, arrival, acquired, released]) => ({
          worker: worker * 100 + loop,
          arrival,
          acquired,
          released,
        })),
    );
    const pids = new Map<number, number>();
    ready.forEach((r, worker) => {
      if (r.pid !== undefined) pids.set(worker * 100, r.pid);
    });
    const errors = results.reduce((sum, r) => sum + r.errors, 0);
    const firstError = results.find((r) => r.firstError)?.firstError;
    if (firstError) log(`  ${designs[design]!.name} × ${count}: ${errors} errors, first: ${firstError}`);
    return {
      cycles,
      pids,
      observations,
      errors,
      ms,
      grants: results.reduce((sum, r) => sum + r.cycles.length, 0),
      clientUs: results.reduce((sum, r) => sum + r.cpuUs, 0),
      serverUs: used.serverUs,
    };
  };

  const summarize = (design: number, count: number, loops: number, runs: readonly RunResult[]): HotKeyRow => {
    // Rounds are separate runs: analyse each, and pool what can be pooled.
    const stats = runs.map((r) => analyse(r.cycles, r.ms));
    const handOffs = stats.flatMap((s) => s.handOffsMs);
    const sorted = [...handOffs].sort((a, b) => a - b);
    const at = (p: number) =>
      sorted.length === 0
        ? Number.NaN
        : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
    const acquisitions = stats.reduce((sum, s) => sum + s.acquisitions, 0);
    const totalMs = runs.reduce((sum, r) => sum + r.ms, 0);
    const weigh = (pick: (s: HotKeyStats) => number) =>
      acquisitions === 0 ? 0 : stats.reduce((sum, s) => sum + pick(s) * s.acquisitions, 0) / acquisitions;
    const orders = runs.some((r) => r.pids.size > 0)
      ? runs.map((r) => serverOrder(r.cycles, r.pids, r.observations))
      : undefined;
    const seenCycles = orders?.reduce((sum, o, i) => sum + o.seen * runs[i]!.cycles.length, 0) ?? 0;
    const grants = runs.reduce((sum, r) => sum + r.grants, 0);
    return {
      design: designs[design]!.name,
      polls: designs[design]!.polls,
      workers: count,
      loops,
      rounds: runs.length,
      errors: runs.reduce((sum, r) => sum + r.errors, 0),
      acquisitions,
      opsPerSec: acquisitions / (totalMs / 1_000),
      handOffP50Ms: at(50),
      handOffP99Ms: at(99),
      handOffs: handOffs.length,
      handOffsMs: [],
      maxWaitMs: Math.max(...stats.map((s) => s.maxWaitMs)),
      outOfOrder: weigh((s) => s.outOfOrder),
      outOfOrderBeyondTolerance: weigh((s) => s.outOfOrderBeyondTolerance),
      overlaps: stats.reduce((sum, s) => sum + s.overlaps, 0),
      clientUsPerGrant: runs.reduce((sum, r) => sum + r.clientUs, 0) / grants,
      serverUsPerGrant: runs.some((r) => r.serverUs === undefined)
        ? Number.NaN
        : runs.reduce((sum, r) => sum + r.serverUs!, 0) / grants,
      server:
        orders === undefined
          ? undefined
          : {
              seen: seenCycles / Math.max(1, acquisitions),
              outOfOrder: weighSeen(orders, runs, (o) => o.outOfOrder) / Math.max(1, seenCycles),
              outOfOrderBeyondTolerance:
                weighSeen(orders, runs, (o) => o.outOfOrderBeyondTolerance) / Math.max(1, seenCycles),
              largestInversionMs: Math.max(...orders.map((o) => o.largestInversionMs)),
            },
    };
  };

  try {
    await Promise.all(workers.map((w) => w.next('started')));
    const rows: HotKeyRow[] = [];
    const comparisons: HotKeyComparison[] = [];
    const pair = async (count: number, loops: number) => {
      const runs: [RunResult[], RunResult[]] = [[], []];
      const ratios = { handOff: [] as number[], throughput: [] as number[] };
      for (let round = 0; round < rounds; round++) {
        const order = round % 2 === 0 ? [PGLOCK, HAND_WRITTEN] : [HAND_WRITTEN, PGLOCK];
        for (const design of order) runs[design]!.push(await runOnce(design, count, loops, roundMs));
        const [mine, theirs] = [runs[PGLOCK].at(-1)!, runs[HAND_WRITTEN].at(-1)!].map((r) =>
          analyse(r.cycles, r.ms),
        );
        ratios.handOff.push(theirs!.handOffP50Ms / mine!.handOffP50Ms);
        ratios.throughput.push(mine!.opsPerSec / theirs!.opsPerSec);
      }
      const label = loops > 1 ? `1 process × ${loops} callers` : `${count} workers`;
      const pairRows = [PGLOCK, HAND_WRITTEN].map((design) => {
        const row = summarize(design, count, loops, runs[design]!);
        rows.push(row);
        log(
          `  ${row.design}, ${label}: ${row.opsPerSec.toFixed(0)}/s, hand-off p50 ${row.handOffP50Ms.toFixed(3)} ms, CPU per grant ${row.clientUsPerGrant.toFixed(0)} µs client + ${row.serverUsPerGrant.toFixed(0)} µs server`,
        );
        return row;
      });
      const [mine, theirs] = pairRows as [HotKeyRow, HotKeyRow];
      const comparison: HotKeyComparison = {
        workers: count,
        loops,
        handOff: spread(ratios.handOff),
        throughput: spread(ratios.throughput),
        clientCpu: mine.clientUsPerGrant / theirs.clientUsPerGrant,
        serverCpu: mine.serverUsPerGrant / theirs.serverUsPerGrant,
      };
      comparisons.push(comparison);
      log(
        `  pglock ÷ hand-written, ${label}: throughput median ${median(ratios.throughput).toFixed(2)}×, hand-off median ${median(ratios.handOff).toFixed(2)}×, CPU per grant ${comparison.clientCpu.toFixed(2)}× client, ${comparison.serverCpu.toFixed(2)}× server`,
      );
    };
    for (const count of workerCounts) {
      await pair(count, 1);
      for (let design = HAND_WRITTEN + 1; design < designs.length; design++) {
        const row = summarize(design, count, 1, [await runOnce(design, count, 1, alternativeMs)]);
        rows.push(row);
        log(
          `  ${row.design} × ${count}: ${row.opsPerSec.toFixed(0)}/s, hand-off p50 ${row.handOffP50Ms.toFixed(3)} ms`,
        );
      }
    }
    if (inProcessLoops > 1) await pair(1, inProcessLoops);
    for (const w of workers) w.send({ type: 'exit' });
    return { rows, comparisons, serverCpu: cpu.unavailable };
  } finally {
    for (const w of workers) w.kill();
    await monitor.end().catch(() => undefined);
    await cpu.close();
  }
}
