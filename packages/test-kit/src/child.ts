import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { AdapterHarness } from './harness.ts';

const workerPath = fileURLToPath(new URL('./worker.ts', import.meta.url));

/** A worker process running one scenario against its own adapter instance. */
export class Child {
  readonly process: ChildProcess;
  readonly events: Record<string, unknown>[] = [];
  readonly #waiters: { event: string; resolve: (e: Record<string, unknown>) => void }[] = [];
  readonly exited: Promise<number | null>;
  #stderr = '';

  constructor(harness: AdapterHarness, url: string, scenario: string, args: Record<string, unknown>) {
    // The `source` condition makes workspace packages resolve to src/ (run by tsx), like the tests.
    this.process = spawn(
      process.execPath,
      [
        '--conditions=@pglock/source',
        '--import',
        'tsx',
        workerPath,
        harness.moduleUrl,
        harness.exportName,
        scenario,
        JSON.stringify(args),
      ],
      { env: { ...process.env, DATABASE_URL: url }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.process.stderr?.on('data', (chunk) => {
      this.#stderr += String(chunk);
    });
    createInterface({ input: this.process.stdout! }).on('line', (line) => {
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
    });
    this.exited = new Promise((resolve) => this.process.once('exit', (code) => resolve(code)));
  }

  /** Resolves with the first event named `event` (already seen or still to come). */
  next(event: string, timeoutMs = 30_000): Promise<Record<string, unknown>> {
    const seen = this.events.find((e) => e.event === event);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no "${event}" from worker within ${timeoutMs} ms; stderr:\n${this.#stderr}`)),
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
        if (code !== 0 && code !== null)
          reject(new Error(`worker exited with ${code}; stderr:\n${this.#stderr}`));
      });
    });
  }

  async expectSuccess(): Promise<void> {
    const code = await this.exited;
    if (code !== 0) throw new Error(`worker exited with ${code}; stderr:\n${this.#stderr}`);
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    this.process.kill(signal);
  }
}
