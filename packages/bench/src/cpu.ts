import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

/**
 * `url` with `application_name` set, so that the backends of one subject or design can be found in
 * `pg_stat_activity` (and their CPU read from /proc) among everyone else's on a shared server.
 *
 * @example
 * ```ts
 * const tagged = withApplicationName(url, 'pglock-bench/123/pg');
 * ```
 */
export function withApplicationName(url: string, name: string): string {
  const parsed = new URL(url);
  // PostgreSQL keeps 63 bytes of it; longer names would collide after the cut.
  parsed.searchParams.set('application_name', name.slice(0, 63));
  // Spelled with %20, not URLSearchParams' `+`: libpq decodes only percent escapes.
  return parsed.toString().replaceAll('+', '%20');
}

/** The application name of a run's connections: this process, then what they belong to. */
export function benchApplicationName(what: string): string {
  return `pglock-bench/${process.pid}/${what}`;
}

/** CPU used over a window: this process's, and the tagged backends' when /proc could be read. */
export interface CpuWindow {
  /** Client (this process) CPU µs, user + system. */
  readonly clientUs: number;
  /** Server CPU µs of the backends found at the window's start; undefined: see `BackendCpu.unavailable`. */
  readonly serverUs: number | undefined;
}

interface Started {
  readonly client: NodeJS.CpuUsage;
  readonly pids: readonly number[];
  readonly server: ReadonlyMap<number, number> | undefined;
}

/**
 * Reads the CPU time of PostgreSQL backends from /proc (the server runs on this machine): each
 * backend's `/proc/<pid>/schedstat` (nanoseconds on the CPU) when the kernel keeps it, else
 * utime + stime of `/proc/<pid>/stat` in clock ticks (`getconf CLK_TCK`, 10 ms at 100 Hz, coarse
 * for a short window: the report adds the windows of all rounds before dividing). The backends are
 * found by `application_name` from a monitor connection of its own (its own CPU is not counted).
 *
 * @example
 * ```ts
 * const cpu = await BackendCpu.open(url);
 * const window = await cpu.start('pglock-bench/123/pg');
 * // … the measured work …
 * const { clientUs, serverUs } = await cpu.end(window);
 * ```
 */
export class BackendCpu {
  readonly #client: pg.Client;
  readonly #usPerTick: number;
  #unavailable: string | undefined;

  private constructor(client: pg.Client, usPerTick: number, unavailable: string | undefined) {
    this.#client = client;
    this.#usPerTick = usPerTick;
    this.#unavailable = unavailable;
  }

  static async open(url: string): Promise<BackendCpu> {
    const client = new pg.Client({
      connectionString: withApplicationName(url, benchApplicationName('monitor')),
    });
    client.on('error', () => undefined);
    await client.connect();
    const ticks = await run('getconf', ['CLK_TCK'])
      .then(({ stdout }) => Number(stdout.trim()))
      .catch(() => 100);
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    // The server's own backend of this connection tells whether its /proc entry is ours to read.
    const probe = await readBackend(rows[0]!.pid, 1).catch((error: unknown) => String(error));
    const unavailable =
      typeof probe === 'string'
        ? `/proc of the server's backends not readable here (${probe}); PostgreSQL on another machine or in another PID namespace`
        : undefined;
    return new BackendCpu(
      client,
      1_000_000 / (Number.isFinite(ticks) && ticks > 0 ? ticks : 100),
      unavailable,
    );
  }

  /** Why server CPU is not measured, or undefined when it is. */
  get unavailable(): string | undefined {
    return this.#unavailable;
  }

  /** The backends whose `application_name` is `name` (or starts with it, `prefix`), now. */
  async pids(name: string, prefix = false): Promise<number[]> {
    const { rows } = await this.#client.query<{ pid: number }>(
      prefix
        ? 'SELECT pid FROM pg_stat_activity WHERE starts_with(application_name, $1)'
        : 'SELECT pid FROM pg_stat_activity WHERE application_name = $1',
      [name],
    );
    return rows.map((r) => r.pid);
  }

  /** Starts a window on the backends named `name` (a prefix with `prefix`) and this process. */
  async start(name: string, prefix = false): Promise<Started> {
    const pids = this.#unavailable === undefined ? await this.pids(name, prefix) : [];
    const server = this.#unavailable === undefined ? await this.#read(pids) : undefined;
    return { client: process.cpuUsage(), pids, server };
  }

  /**
   * Ends a window: CPU µs since `start`. Only the backends open at the start count (one gone
   * meanwhile is left out of both ends); none open then: `serverUs` undefined.
   */
  async end(started: Started): Promise<CpuWindow> {
    const used = process.cpuUsage(started.client);
    const clientUs = used.user + used.system;
    // No backend open at the start: a design that connects per lock (advisory-lock) has its
    // backends come and go within the window, out of reach: unknown, not zero.
    if (started.server === undefined || started.pids.length === 0) return { clientUs, serverUs: undefined };
    const now = await this.#read(started.pids);
    let serverUs = 0;
    for (const [pid, before] of started.server) {
      const after = now.get(pid);
      if (after !== undefined) serverUs += after - before;
    }
    return { clientUs, serverUs };
  }

  async #read(pids: readonly number[]): Promise<Map<number, number>> {
    const read = await Promise.all(
      pids.map((pid) =>
        readBackend(pid, this.#usPerTick).then(
          (us) => [pid, us] as const,
          () => undefined,
        ),
      ),
    );
    return new Map(read.filter((r) => r !== undefined));
  }

  close(): Promise<void> {
    return this.#client.end().catch(() => undefined);
  }
}

/** A process's CPU µs: schedstat's nanoseconds on the CPU when present, else utime + stime ticks. */
async function readBackend(pid: number, usPerTick: number): Promise<number> {
  const schedstat = await readFile(`/proc/${pid}/schedstat`, 'utf8').catch(() => undefined);
  const ns = schedstat === undefined ? Number.NaN : Number(schedstat.split(' ')[0]);
  if (Number.isFinite(ns)) return ns / 1_000;
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) is in parentheses and may hold spaces: count fields after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * usPerTick;
}
