import { parseArgs } from 'node:util';
import { JOBS_TABLE_DDL } from '@pglock/core';
import { CliError, ExitCode } from '../exit-codes.ts';
import type { CommandIo } from './io.ts';

/**
 * `pglock schema`: prints the DDL of `pglock_jobs`, the table behind `runOnce` and `leader`, for a
 * migration (`pglock schema > migrations/0001_pglock_jobs.sql`) or a pipe (`pglock schema | psql`).
 * It connects to nothing.
 *
 * @example
 * ```ts
 * import { schemaCommand } from './schema.ts';
 *
 * process.exitCode = schemaCommand([], process);
 * ```
 */
export function schemaCommand(args: readonly string[], io: CommandIo): number {
  const { positionals } = parseArgs({ args: [...args], allowPositionals: true, options: {} });
  if (positionals.length !== 0) throw new CliError('Usage: pglock schema', ExitCode.usage);
  io.stdout.write(`${JOBS_TABLE_DDL}\n`);
  return ExitCode.ok;
}
