import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { HOT_KEY, HOT_ROW } from './database.ts';

const run = promisify(execFile);

/** A pgbench result, or why there is none. */
export type PgbenchResult =
  | { readonly tps: number; readonly latencyMs: number }
  | { readonly skipped: string };

/** The locked transaction of scenario 1 as pgbench script: a distinct key per transaction, own row per client. */
export const distinctKeysScript = `\\set k random(1, 1000000000000)
BEGIN;
SELECT pg_advisory_xact_lock(:k);
UPDATE bench_counter SET n = n + 1 WHERE id = :client_id + 1;
COMMIT;
`;

/** The hot-key transaction of scenario 2: every client on one key and one row. */
export const hotKeyScript = `BEGIN;
SELECT pg_advisory_xact_lock(${HOT_KEY});
UPDATE bench_counter SET n = n + 1 WHERE id = ${HOT_ROW};
COMMIT;
`;

/**
 * Runs pgbench with `script` on `clients` connections for `seconds`, by default with prepared
 * statements (the server's parse and plan costs are out: the ceiling). `extended` parses and plans
 * every statement with its parameters, as node-postgres and Prisma do; `simple` sends the values as
 * literals. libpq reads the URL's `options` (synchronous_commit) too.
 *
 * @example
 * ```ts
 * const result = await pgbench(url, hotKeyScript, 8, 2);
 * ```
 */
export async function pgbench(
  url: string,
  script: string,
  clients: number,
  seconds: number,
  protocol: 'prepared' | 'extended' | 'simple' = 'prepared',
): Promise<PgbenchResult> {
  const dir = await mkdtemp(join(tmpdir(), 'pglock-bench-'));
  const file = join(dir, 'script.sql');
  try {
    await writeFile(file, script);
    const args = [
      '-n',
      '-M',
      protocol,
      '-c',
      String(clients),
      '-j',
      String(Math.min(clients, 2)),
      '-T',
      String(seconds),
      '-f',
      file,
      url,
    ];
    const { stdout } = await run('pgbench', args);
    const tps = /tps = ([\d.]+)/.exec(stdout)?.[1];
    const latency = /latency average = ([\d.]+) ms/.exec(stdout)?.[1];
    if (tps === undefined) return { skipped: `pgbench printed no tps:\n${stdout}` };
    return { tps: Number(tps), latencyMs: Number(latency ?? Number.NaN) };
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    return {
      skipped:
        code === 'ENOENT'
          ? 'pgbench is not installed (Debian: apt-get install postgresql-client)'
          : `pgbench failed: ${String((error as Error).message).split('\n')[0]}`,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The bounded wait by hand: `SET LOCAL lock_timeout` as its own statement, then the lock. */
const setLocalScript = `\\set k random(1, 1000000000000)
BEGIN;
SET LOCAL lock_timeout = '5000ms';
SELECT pg_advisory_xact_lock(:k::text::bigint);
COMMIT;
`;

/** pglock's bounded wait before the one-SELECT form: three MATERIALIZED CTEs and an aggregate. */
const previousTimed =
  "WITH prev AS MATERIALIZED (SELECT current_setting('lock_timeout') AS lock_timeout), " +
  "budget AS MATERIALIZED (SELECT set_config('lock_timeout', :b::text, true) AS ms FROM prev), " +
  'locked AS MATERIALIZED (SELECT pg_advisory_xact_lock(:k::text::bigint) FROM budget) ' +
  "SELECT count(*)::int AS locked, set_config('lock_timeout', (SELECT lock_timeout FROM prev), true) AS restored FROM locked";

function lockedTransaction(statement: string): string {
  return `\\set k random(1, 1000000000000)\n\\set b 5000\nBEGIN;\n${statement};\nCOMMIT;\n`;
}

/**
 * The transaction of scenario 1 without the work, with each way of taking one key: the bare lock,
 * `SET LOCAL` + lock, pglock's previous bounded statement and its current one (`timedText`, the text
 * core sends, with `$1` the budget and `$2` the key).
 *
 * @example
 * ```ts
 * const scripts = timedFormScripts(timedLockStatement([lockKey(1n)], 'transaction', false, 5_000).text);
 * ```
 */
export function timedFormScripts(
  timedText: string,
): readonly { readonly name: string; readonly script: string }[] {
  const current = timedText.replace('$1', ':b').replace('$2', ':k');
  return [
    {
      name: 'pg_advisory_xact_lock($1), no bound',
      script: lockedTransaction('SELECT pg_advisory_xact_lock(:k::text::bigint)'),
    },
    { name: 'SET LOCAL lock_timeout + lock (two statements)', script: setLocalScript },
    { name: 'previous pglock bounded statement (three CTEs)', script: lockedTransaction(previousTimed) },
    { name: 'pglock bounded statement (one SELECT)', script: lockedTransaction(current) },
  ];
}
