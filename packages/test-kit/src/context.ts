import { randomUUID } from 'node:crypto';
import { lockKey } from '@pglock/core';
import { afterAll, afterEach, beforeAll, inject } from 'vitest';
import { Backdoor } from './backdoor.ts';
import type { AdapterHarness, AdapterInstance, Capabilities, OpenOptions } from './harness.ts';
import type {} from './provided-context.ts';

/** How a suite opens an instance: the harness's options, and where to connect. */
export interface SuiteOpenOptions extends OpenOptions {
  /** Connect here instead of {@link SuiteContext.url} (e.g. a PgBouncer in another pool mode). */
  readonly url?: string | undefined;
}

/** The PgBouncers the global setup started in front of the test database. */
export interface PgBouncerUrls {
  readonly transactionUrl: string;
  readonly sessionUrl: string;
}

/** What every suite gets: the harness, a backdoor connection, and instances closed after each test. */
export interface SuiteContext {
  readonly harness: AdapterHarness;
  /** The URL the adapter connects to (the database, or a pooler in front of it). */
  readonly url: string;
  /** True when the adapter connects through a (transaction-mode) pooler, whose server connections sessions share. */
  readonly viaPooler: boolean;
  /** The PgBouncers of this run, or the reason there are none ({@link SuiteContext.pgbouncerMissing}). */
  readonly pgbouncer: PgBouncerUrls | undefined;
  readonly pgbouncerMissing: string | undefined;
  readonly backdoor: Backdoor;
  /** Opens an adapter instance that is closed after the test (`close()` may also be called before: once). */
  open(options?: SuiteOpenOptions): Promise<AdapterInstance>;
  /** A lock name no other test uses, and its bigint key for `pg_locks` checks. */
  name(label: string): { name: string; key: bigint };
  /** A fresh table name prefix (tables are dropped after the suite). */
  table(): string;
  /**
   * Why the tests that start worker processes are skipped in this run, or undefined when they run:
   * the harness cannot run in child processes, or this matrix row leaves them to its adapter's
   * whole-kit rows (see `processes` in matrix.ts).
   */
  readonly noProcesses: string | undefined;
}

/** The reason a kit run leaves the worker-process tests out (the matrix's secondary rows, `PGLOCK_PROCESSES=0`). */
export interface ProcessesElsewhere {
  readonly skipped: string;
}

/** Registers the hooks behind a {@link SuiteContext}; call inside a `describe`. */
export function useSuiteContext(
  harness: AdapterHarness,
  adapterUrl?: string,
  processes?: ProcessesElsewhere,
): SuiteContext {
  const directUrl = inject('databaseUrl');
  const url = adapterUrl ?? directUrl;
  const bouncers = inject('pgbouncer');
  let backdoor: Backdoor | undefined;
  const opened: AdapterInstance[] = [];
  const tables: string[] = [];
  beforeAll(async () => {
    backdoor = await Backdoor.open(directUrl);
  });
  afterEach(async () => {
    await Promise.allSettled(opened.splice(0).map((instance) => instance.close()));
  });
  afterAll(async () => {
    for (const table of tables) {
      await backdoor?.query(`DROP TABLE IF EXISTS ${table}_counter, ${table}_intervals, ${table}_rows`);
    }
    await backdoor?.close();
  });
  return {
    harness,
    url,
    viaPooler: url !== directUrl,
    pgbouncer: 'transactionUrl' in bouncers ? bouncers : undefined,
    pgbouncerMissing: 'missing' in bouncers ? bouncers.missing : undefined,
    get backdoor() {
      if (!backdoor) throw new Error('backdoor used outside a test');
      return backdoor;
    },
    async open(options = {}) {
      const { url: at, ...rest } = options;
      const instance = await harness.open(at ?? url, rest);
      // A test may close an instance itself (to see that it settles); the teardown must not close it twice.
      let closing: Promise<void> | undefined;
      const once: AdapterInstance = { ...instance, close: () => (closing ??= instance.close()) };
      opened.push(once);
      return once;
    },
    name(label) {
      const name = `conformance:${harness.name}:${label}:${randomUUID()}`;
      return { name, key: (lockKey(name) as { value: bigint }).value };
    },
    table() {
      const table = `pglock_t_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
      tables.push(table);
      return table;
    },
    noProcesses:
      missing(harness.capabilities, 'multiProcess', 'the adapter cannot run in child processes') ??
      processes?.skipped ??
      processesOffByEnv(),
  };
}

/** ` (skipped: reason)` for a suite or test title, or nothing when it runs. */
export function skipped(reason: string | undefined): string {
  return reason ? ` (skipped: ${reason})` : '';
}

/**
 * `PGLOCK_PROCESSES=0` (the peer-range version lanes) leaves out every test that starts worker
 * processes: the workers load the adapter code that this run's single-process tests already check
 * against that release, and what one process does reaches another only through the server, whose
 * side of it (a holder's death, a lease ending, a schedule's row) no release changes. The main lanes
 * and PostgreSQL 18's run them (there once per driver family: `leadsFamily` in matrix.ts).
 */
function processesOffByEnv(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const value = env.PGLOCK_PROCESSES?.trim();
  return value === '0' || value === 'false'
    ? 'PGLOCK_PROCESSES=0: the worker-process tests run in the main lanes'
    : undefined;
}

/** The first reason of several to skip, or undefined when none applies. */
export function firstReason(...reasons: (string | undefined)[]): string | undefined {
  return reasons.find((reason) => reason !== undefined);
}

/**
 * Settles like `promise`, or rejects once `ms` have passed, saying `what` hung: a test of a call
 * that used to hang fails with a message instead of a test timeout.
 */
export async function settlesWithin<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The value a promise settles with, or its rejection reason, without throwing. */
export function outcome<T>(
  promise: Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  return promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

/**
 * Records what would crash an app's process (an uncaught exception, such as an `'error'` event no
 * one listens for, or an unhandled rejection) from now until `stop()`, which returns them. Vitest
 * reports these too, but only for the whole run; a test that watches fails itself.
 */
export function watchCrashes(): { stop(): unknown[] } {
  const seen: unknown[] = [];
  const record = (error: unknown): void => {
    seen.push(error);
  };
  process.on('uncaughtException', record);
  process.on('unhandledRejection', record);
  return {
    stop() {
      process.off('uncaughtException', record);
      process.off('unhandledRejection', record);
      return seen;
    },
  };
}

/**
 * `url` with server settings for every connection opened through it, as the startup packet's
 * `options` (`-c name=value`): node-postgres and postgres.js both pass the URL's `options` on.
 * PgBouncer drops the parameter (its config ignores `options`), so a test through a pooler would
 * not get them.
 */
export function withServerSettings(url: string, settings: Readonly<Record<string, string | number>>): string {
  const options = Object.entries(settings)
    .map(([name, value]) => `-c ${name}=${value}`)
    .join(' ');
  const [base, query = ''] = url.split('?', 2) as [string, string?];
  const params = new URLSearchParams(query);
  const given = params.get('options');
  params.delete('options');
  const rest = params.toString();
  // Spelled with %20, not URLSearchParams' `+`: every driver decodes it as a space.
  const value = encodeURIComponent(given ? `${given} ${options}` : options);
  return `${base}?${rest === '' ? '' : `${rest}&`}options=${value}`;
}

/** The server's major version (`server_version_num` / 10000), read on the backdoor. */
export async function serverMajor(backdoor: Backdoor): Promise<number> {
  const [row] = await backdoor.query<{ v: number }>("SELECT current_setting('server_version_num')::int AS v");
  return Math.floor(Number(row?.v) / 10_000);
}

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The reason a capability-gated suite is skipped, or undefined when it runs. */
export function missing(
  capabilities: Capabilities,
  needed: Exclude<keyof Capabilities, 'transactionSettings'>,
  why: string,
): string | undefined {
  // Optional capabilities default to true: only an adapter that lacks one says so.
  return (capabilities[needed] ?? true) ? undefined : why;
}

/** A promise plus its resolve, to hold a lock open until the test says so. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** A lock held by `instance` inside its `withLock` until `release()`; `pid` is the holder's backend. */
export interface HeldLock {
  readonly pid: number;
  release(): Promise<void>;
}

/** Takes `target` with `instance.withLock` and keeps the callback open until `release()`. */
export async function holdLock(
  instance: AdapterInstance,
  target: Parameters<AdapterInstance['withLock']>[0],
  options?: Parameters<AdapterInstance['withLock']>[2],
): Promise<HeldLock> {
  const entered = deferred<number>();
  const leave = deferred();
  const done = instance.withLock(
    target,
    async (sql) => {
      const [row] = await sql('SELECT pg_backend_pid() AS pid');
      entered.resolve(Number(row?.pid));
      await leave.promise;
    },
    options,
  );
  const pid = await Promise.race([entered.promise, done.then(() => Number.NaN)]);
  return {
    pid,
    async release() {
      leave.resolve();
      await done;
    },
  };
}

/** Backend pid of the connection behind `sql`. */
export async function pidOf(sql: (text: string) => Promise<Record<string, unknown>[]>): Promise<number> {
  const [row] = await sql('SELECT pg_backend_pid() AS pid');
  return Number(row?.pid);
}
