import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { nowUs } from './clock.ts';
import { HOT_KEY, HOT_ROW } from './database.ts';
import { designs } from './designs.ts';
import { analyse, type Cycle, type HotKeyStats } from './hand-off.ts';
import type { ToParent, ToWorker } from './hot-key-messages.ts';

/** One row of scenarios 2 and 3: a design at a worker count. */
export interface HotKeyRow extends HotKeyStats {
  readonly design: string;
  readonly polls: boolean;
  readonly workers: number;
  readonly errors: number;
}

export interface HotKeyOptions {
  readonly url: string;
  readonly workerCounts: readonly number[];
  readonly runMs: number;
  readonly log: (line: string) => void;
}

const workerPath = fileURLToPath(new URL('./hot-key-worker.ts', import.meta.url));

class Worker {
  readonly #child: ChildProcess;
  readonly #inbox: ToParent[] = [];
  #wake: (() => void) | undefined;
  #stderr = '';

  constructor() {
    this.#child = fork(workerPath, [], {
      execArgv: ['--conditions=@pglock/source', '--import', 'tsx'],
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

/**
 * Scenarios 2 and 3: every design with 2, 8 and 32 worker processes on one key. The workers are
 * forked once and reused for every run (starting 32 TypeScript processes costs seconds of CPU).
 *
 * @example
 * ```ts
 * const rows = await runHotKey({ url, workerCounts: [2, 8, 32], runMs: 2_000, log: console.log });
 * ```
 */
export async function runHotKey(options: HotKeyOptions): Promise<HotKeyRow[]> {
  const { url, workerCounts, runMs, log } = options;
  const workers = Array.from({ length: Math.max(...workerCounts) }, () => new Worker());
  try {
    await Promise.all(workers.map((w) => w.next('started')));
    const rows: HotKeyRow[] = [];
    for (const [index, design] of designs.entries()) {
      for (const count of workerCounts) {
        const active = workers.slice(0, count);
        for (const [worker, w] of active.entries()) w.send({ type: 'open', design: index, url, worker });
        await Promise.all(active.map((w) => w.next('ready')));
        const startAt = nowUs() + 50_000;
        const until = startAt + runMs * 1_000;
        for (const w of active) w.send({ type: 'go', startAt, until, key: String(HOT_KEY), row: HOT_ROW });
        const results = await Promise.all(active.map((w) => w.next('done')));
        for (const w of active) w.send({ type: 'close' });
        await Promise.all(active.map((w) => w.next('closed')));
        const cycles: Cycle[] = results.flatMap((r, worker) =>
          r.cycles
            .filter(([, acquired]) => acquired <= until)
            .map(([arrival, acquired, released]) => ({ worker, arrival, acquired, released })),
        );
        const errors = results.reduce((sum, r) => sum + r.errors, 0);
        const firstError = results.find((r) => r.firstError)?.firstError;
        if (firstError) log(`  ${design.name} × ${count}: ${errors} errors, first: ${firstError}`);
        const stats = analyse(cycles, runMs);
        rows.push({ design: design.name, polls: design.polls, workers: count, errors, ...stats });
        log(
          `  ${design.name} × ${count}: ${stats.opsPerSec.toFixed(0)}/s, hand-off p50 ${stats.handOffP50Ms.toFixed(3)} ms`,
        );
      }
    }
    for (const w of workers) w.send({ type: 'exit' });
    return rows;
  } finally {
    for (const w of workers) w.kill();
  }
}
