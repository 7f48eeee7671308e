import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';

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
  /** `os.availableParallelism()`: above it, the scenario ran on a machine busier than its cores. */
  readonly cores: number;
}

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
      return { start, end, max: Math.max(max, end), cores: availableParallelism() };
    },
  };
}

/**
 * Why a window's figures are not judged against a target ("load 3.4 > 2 cores"): the load exceeded
 * the cores during it. Undefined when it did not.
 */
export function overloaded(window: LoadWindow | undefined): string | undefined {
  if (window === undefined) return undefined;
  return window.max > window.cores ? `load ${window.max.toFixed(1)} > ${window.cores} cores` : undefined;
}
