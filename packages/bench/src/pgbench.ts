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
 * Runs pgbench with `script` on `clients` connections for `seconds` (prepared statements, so the
 * server's parse cost is out: the ceiling). libpq reads the URL's `options` (synchronous_commit) too.
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
): Promise<PgbenchResult> {
  const dir = await mkdtemp(join(tmpdir(), 'pglock-bench-'));
  const file = join(dir, 'script.sql');
  try {
    await writeFile(file, script);
    const args = [
      '-n',
      '-M',
      'prepared',
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
