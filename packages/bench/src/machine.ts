import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { watchOtherWork } from './other-work.ts';

const run = promisify(execFile);

/** Where and with what the figures were measured. */
export interface MachineInfo {
  readonly date: string;
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGb: number;
  readonly node: string;
  readonly versions: Readonly<Record<string, string>>;
}

const PACKAGES = [
  '@pglock/pg',
  'pg',
  'postgres',
  'drizzle-orm',
  'kysely',
  '@prisma/client',
  'advisory-lock',
  'redlock',
  'ioredis',
];

async function packageVersion(name: string): Promise<string> {
  const file = new URL(`../node_modules/${name}/package.json`, import.meta.url);
  const { version } = JSON.parse(await readFile(file, 'utf8')) as { version: string };
  return version.replace(/^v/, '');
}

async function redisVersion(): Promise<string> {
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
  });
  try {
    await redis.connect();
    return /redis_version:(\S+)/.exec(await redis.info('server'))?.[1] ?? '?';
  } catch (error) {
    return `unreachable (${String(error)})`;
  } finally {
    redis.disconnect();
  }
}

/**
 * The date, the CPU, memory and the versions of everything measured.
 *
 * @example
 * ```ts
 * const info = await machineInfo('PostgreSQL 18.1 (embedded)');
 * ```
 */
export async function machineInfo(database: string): Promise<MachineInfo> {
  const versions: Record<string, string> = { database };
  for (const name of PACKAGES) versions[name] = await packageVersion(name).catch(() => '?');
  versions.Redis = await redisVersion();
  versions.pgbench = await run('pgbench', ['--version'])
    .then(({ stdout }) => stdout.trim())
    .catch(() => 'not installed');
  return {
    date: new Date().toISOString(),
    cpu: cpus()[0]?.model ?? '?',
    cores: cpus().length,
    memoryGb: totalmem() / 1024 ** 3,
    node: process.version,
    versions,
  };
}

/** The 1-minute load average, rounded: other work on the machine shows here. */
export function load(): string {
  return loadavg()[0]!.toFixed(1);
}

/** The 1-minute load average over one scenario: at its start and end, and the most seen meanwhile. */
export interface LoadWindow {
  readonly start: number;
  readonly end: number;
  readonly max: number;
  /** `os.availableParallelism()`. */
  readonly cores: number;
  /**
   * The CPU the rest of the machine used meanwhile, in cores (see `watchOtherWork`); undefined
   * where /proc cannot tell (then the load average judges).
   */
  readonly otherCores: number | undefined;
}

/**
 * Above this much CPU used by other work (in cores, on average over a scenario) its figures are not
 * judged: a quarter of a core is a busy-looping process given its share of a saturated 2-core
 * machine many times over, and far above what an idle machine's daemons use (0.01–0.05 here).
 */
export const OTHER_WORK_MAX_CORES = 0.25;

/**
 * Watches the load average (sampled every second) until `stop`.
 *
 * @example
 * ```ts
 * const watch = watchLoad();
 * await scenario();
 * const { max, cores } = watch.stop();
 * ```
 */
export function watchLoad(): { readonly start: number; stop(): LoadWindow } {
  const start = loadavg()[0]!;
  // The bench's root process (main.ts) holds the embedded server and every scenario process.
  const other = watchOtherWork([Number(process.env.PGLOCK_BENCH_ROOT ?? process.pid)]);
  let max = start;
  const timer = setInterval(() => {
    max = Math.max(max, loadavg()[0]!);
  }, 1_000);
  timer.unref();
  return {
    start,
    stop() {
      clearInterval(timer);
      const end = loadavg()[0]!;
      const otherCores = other.stop();
      return { start, end, max: Math.max(max, end), cores: availableParallelism(), otherCores };
    },
  };
}

/**
 * Why a window's figures are not judged against a target ("other work 0.61 cores > 0.25"): other
 * processes took CPU during it. The load average counts the bench's own workers and backends (and
 * lags a minute), so it judges only where /proc cannot tell other work apart ("load 3.4 > 2 cores").
 * Undefined when the machine was quiet enough.
 */
export function overloaded(window: LoadWindow | undefined): string | undefined {
  if (window === undefined) return undefined;
  if (window.otherCores !== undefined) {
    return window.otherCores > OTHER_WORK_MAX_CORES
      ? `other work ${window.otherCores.toFixed(2)} cores > ${OTHER_WORK_MAX_CORES}`
      : undefined;
  }
  return window.max > window.cores ? `load ${window.max.toFixed(1)} > ${window.cores} cores` : undefined;
}

/**
 * The other work of a window as the report prints it: "0.03 cores", or "n/a" without /proc.
 *
 * @example
 * ```ts
 * console.log(`other work ${otherWork(window)}`);
 * ```
 */
export function otherWork(window: LoadWindow): string {
  return window.otherCores === undefined ? 'n/a' : `${window.otherCores.toFixed(2)} cores`;
}
