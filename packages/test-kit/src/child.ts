import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { AdapterHarness } from './harness.ts';
import { workerBundle } from './worker-bundle.ts';

const workerPath = fileURLToPath(new URL('./worker.ts', import.meta.url));

/**
 * How long a worker may take to start (load its harness and open its instance) before the test
 * fails: only a broken machine reaches it. Everything after that is budgeted from the start-up the
 * worker measured ({@link Child.budget}), so a loaded machine gets more time and a hang still fails.
 */
export const startupCapMs = 180_000;

/** How a worker is loaded: a bundle of its harness (default), or its TypeScript through tsx. */
const loader = process.env.PGLOCK_WORKER_LOADER?.trim() === 'tsx' ? 'tsx' : 'bundle';

/**
 * How many start-ups' worth of time a scenario gets on top of its own estimate. Starting a worker
 * (loading the adapter, opening a pool) is the same kind of CPU-bound work as what it does next, so
 * its duration measures how slow this machine is right now. A bundled worker starts in about a
 * quarter of a tsx one's time (0.15 s against 0.55–0.65 s wall here), so it gets four times as
 * many: the same slack for the same machine.
 */
const startupsOfSlack = loader === 'tsx' ? 20 : 80;

/** A worker process running one scenario against its own adapter instance. */
export class Child {
  readonly events: Record<string, unknown>[] = [];
  readonly #waiters: { event: string; resolve: (e: Record<string, unknown>) => void }[] = [];
  readonly exited: Promise<number | null>;
  /** Resolves with the worker's start-up time in ms once it has loaded its harness and opened an instance. */
  readonly loaded: Promise<number>;
  #process: ChildProcess | undefined;
  #killWith: NodeJS.Signals | undefined;
  #stderr = '';
  readonly #spawnedAt = performance.now();

  constructor(harness: AdapterHarness, url: string, scenario: string, args: Record<string, unknown>) {
    const json = JSON.stringify(args);
    // The `source` condition makes workspace packages resolve to src/, like the tests: bundled in
    // (worker-bundle.ts), or run by tsx.
    const command: Promise<string[]> =
      loader === 'tsx'
        ? Promise.resolve([
            '--conditions=@pglock/source',
            '--import',
            'tsx',
            workerPath,
            harness.moduleUrl,
            harness.exportName,
            scenario,
            json,
          ])
        : workerBundle(harness.moduleUrl, harness.exportName).then((entry) => [entry, scenario, json]);
    const spawned = command.then((argv) => {
      const child = spawn(process.execPath, argv, {
        env: { ...process.env, DATABASE_URL: url },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      this.#process = child;
      child.stderr?.on('data', (chunk) => {
        this.#stderr += String(chunk);
      });
      createInterface({ input: child.stdout! }).on('line', (line) => this.#onLine(line));
      if (this.#killWith !== undefined) child.kill(this.#killWith);
      return child;
    });
    this.exited = spawned.then(
      (child) => new Promise((resolve) => child.once('exit', (code) => resolve(code))),
      (error: unknown) => {
        this.#stderr += `the worker could not be built: ${String(error)}`;
        return 1;
      },
    );
    this.loaded = this.#until('loaded', startupCapMs, 'to start').then(
      () => performance.now() - this.#spawnedAt,
    );
    // A test that never awaits `loaded` (it kills the worker first) must not see an unhandled rejection.
    this.loaded.catch(() => undefined);
  }

  /** The worker's process; there once it sent its first event (`loaded`). */
  get process(): ChildProcess {
    if (this.#process === undefined) throw new Error('the worker has not started yet: await loaded first');
    return this.#process;
  }

  #onLine(line: string): void {
    let event: Record<string, unknown>;
    try {
      event = JSON.parse(line);
    } catch {
      return;
    }
    this.events.push(event);
    for (const waiter of this.#waiters.filter((w) => w.event === event.event)) {
      this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
      waiter.resolve(event);
    }
  }

  /**
   * The time a scenario estimated at `workMs` (on a quiet machine) gets once the worker has started:
   * the estimate plus {@link startupsOfSlack} times the worker's own measured start-up.
   */
  async budget(workMs: number): Promise<number> {
    return workMs + startupsOfSlack * (await this.loaded);
  }

  /**
   * Resolves with the first event named `event` (already seen or still to come), within the worker's
   * start-up plus {@link Child.budget}(`workMs`).
   */
  async next(event: string, workMs = 10_000): Promise<Record<string, unknown>> {
    const seen = this.events.find((e) => e.event === event);
    if (seen) return seen;
    const budget = await this.budget(workMs);
    return this.#until(event, budget, `after a start-up of ${Math.round(await this.loaded)} ms`);
  }

  /** Resolves once the worker exits with 0, within its start-up plus {@link Child.budget}(`workMs`). */
  async expectSuccess(workMs = 10_000): Promise<void> {
    const budget = await this.budget(workMs);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(new Error(`worker did not exit within ${Math.round(budget)} ms; stderr:\n${this.#stderr}`)),
        budget,
      );
    });
    try {
      const code = await Promise.race([this.exited, late]);
      if (code !== 0) throw new Error(`worker exited with ${code}; stderr:\n${this.#stderr}`);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Sends `signal` to the worker (at once, or as it starts if it has not yet). */
  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    if (this.#process === undefined) this.#killWith = signal;
    else this.#process.kill(signal);
  }

  #until(event: string, timeoutMs: number, context: string): Promise<Record<string, unknown>> {
    const seen = this.events.find((e) => e.event === event);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `no "${event}" from worker within ${Math.round(timeoutMs)} ms ${context}; stderr:\n${this.#stderr}`,
            ),
          ),
        timeoutMs,
      );
      this.#waiters.push({
        event,
        resolve: (e) => {
          clearTimeout(timer);
          resolve(e);
        },
      });
      this.exited.then((code) => {
        clearTimeout(timer);
        if (code !== 0 && code !== null)
          reject(new Error(`worker exited with ${code}; stderr:\n${this.#stderr}`));
        else reject(new Error(`worker exited (${code}) before "${event}"; stderr:\n${this.#stderr}`));
      });
    });
  }
}

/**
 * Vitest's timeout for a test that runs workers: only a backstop above every budget a {@link Child}
 * derives (start-up cap plus slack), so that the verdict on a slow machine is a worker's own budget,
 * with its message, never vitest's fixed timeout.
 */
export const processTestTimeout = 20 * 60_000;
