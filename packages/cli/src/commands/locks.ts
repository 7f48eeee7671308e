import { parseArgs } from 'node:util';
import { sqlStateOf } from '@pglock/core/adapter';
import { inspectLocks } from '@pglock/pg';
import type pg from 'pg';
import { connectionError, connectionTarget, openPool, permissionError } from '../connection.ts';
import { parseDuration } from '../duration.ts';
import { CliError, ExitCode } from '../exit-codes.ts';
import { formatLockReport, styleFor } from '../format.ts';
import { bigintKeys, buildLockReport, type LockReport } from '../lock-report.ts';
import { loadNamesFile, type NameIndex } from '../names.ts';
import { readRegistry } from '../registry.ts';
import { type CommandIo, onStopSignals, sleep } from './io.ts';

/** `pglock locks [--watch] [--json] [--names file] [--namespace ns] [--interval 2s] [--url url]`. */
export async function locksCommand(args: readonly string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...args],
    allowPositionals: true,
    options: {
      url: { type: 'string' },
      names: { type: 'string' },
      namespace: { type: 'string', short: 'n' },
      json: { type: 'boolean' },
      watch: { type: 'boolean', short: 'w' },
      interval: { type: 'string', default: '2s' },
    },
  });
  if (positionals.length > 0) throw new CliError(`Unexpected argument ${positionals[0]}.`, ExitCode.usage);
  const interval = Math.max(100, parseDuration(values.interval, '--interval'));
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
}

async function snapshot(pool: pg.Pool, fileNames: NameIndex): Promise<LockReport> {
  const rows = await inspectLocks(pool);
  const registry = await readRegistry(pool, bigintKeys(rows));
  // An explicit --names file wins over what services published.
  const names: NameIndex = new Map([...registry.names, ...fileNames]);
  return buildLockReport(rows, names, registry.warning === undefined ? [] : [registry.warning]);
}
