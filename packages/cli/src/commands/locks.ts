import { sqlStateOf } from '@pglock/core/adapter';
import { inspectLocks } from '@pglock/pg';
import type pg from 'pg';
import { connectionError, connectionTarget, openPool, permissionError } from '../connection.ts';
import { parseDuration } from '../duration.ts';
import { ExitCode } from '../exit-codes.ts';
import { formatLockReport, styleFor } from '../format.ts';
import { bigintKeys, buildLockReport, type LockReport } from '../lock-report.ts';
import { loadNamesFile, type NameIndex } from '../names.ts';
import { type CommandSpec, defineCommand } from '../parse-command.ts';
import { readRegistry } from '../registry.ts';
import { onStopSignals, sleep } from './io.ts';

const locksSpec = {
  name: 'locks',
  summary: 'holders and waiters of every advisory lock, contention first',
  usage: 'locks [--watch] [--json] [--names file] [--namespace ns] [--interval 2s] [--url url]',
  positionals: [],
  options: {
    watch: { type: 'boolean', short: 'w', description: 'refresh in place until Ctrl-C' },
    json: { type: 'boolean', description: 'print JSON (with --watch, one document a line)' },
    names: {
      type: 'string',
      value: 'file',
      description: 'names for keys, one a line (ns<TAB>name) or JSON',
    },
    namespace: {
      type: 'string',
      short: 'n',
      value: 'ns',
      description: 'namespace of the names in --names that have none',
    },
    interval: { type: 'string', value: '2s', description: 'how often --watch refreshes (default 2s)' },
    url: { type: 'string', value: 'url', description: 'PostgreSQL URL (default: DATABASE_URL)' },
  },
  details: [
    'Names also come from the pglock_lock_names table that services publish (registerLockNames).',
    'Holders show how long they have held the lock, waiters how long they have waited.',
  ],
} as const satisfies CommandSpec;

/** `pglock locks [--watch] [--json] [--names file] [--namespace ns] [--interval 2s] [--url url]`. */
export const locksCommand = defineCommand(locksSpec, async ({ values }, io) => {
  const interval = Math.max(100, parseDuration(values.interval ?? '2s', '--interval'));
  const target = connectionTarget(values.url, io.env);
  const fileNames =
    values.names === undefined ? new Map() : await loadNamesFile(values.names, values.namespace);
  const pool = await openPool(target, { applicationName: 'pglock locks' });
  const stop = onStopSignals();
  const tty = io.stdout.isTTY === true;
  try {
    do {
      let report: LockReport;
      try {
        report = await snapshot(pool, fileNames);
      } catch (error) {
        if (sqlStateOf(error) === '42501') throw permissionError(error);
        throw connectionError(error, target);
      }
      if (values.json) io.stdout.write(`${JSON.stringify(report, null, values.watch ? undefined : 2)}\n`);
      else {
        // Like top: home the cursor and clear, so the picture refreshes in place.
        const clear = values.watch && tty ? '\x1b[H\x1b[2J' : values.watch ? '\n' : '';
        io.stdout.write(clear + formatLockReport(report, styleFor(io.stdout, io.env)));
      }
      if (values.watch) await sleep(interval, stop.signal);
    } while (values.watch && !stop.signal.aborted);
  } finally {
    stop.dispose();
    await pool.end();
  }
  return ExitCode.ok;
});

async function snapshot(pool: pg.Pool, fileNames: NameIndex): Promise<LockReport> {
  const rows = await inspectLocks(pool);
  const registry = await readRegistry(pool, bigintKeys(rows));
  // An explicit --names file wins over what services published.
  const names: NameIndex = new Map([...registry.names, ...fileNames]);
  return buildLockReport(rows, names, registry.warning === undefined ? [] : [registry.warning]);
}
