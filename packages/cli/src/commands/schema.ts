import { JOBS_TABLE_DDL } from '@pglock/core';
import { ExitCode } from '../exit-codes.ts';
import { type CommandSpec, defineCommand } from '../parse-command.ts';

const schemaSpec = {
  name: 'schema',
  summary: 'the DDL of pglock_jobs, the table behind runOnce and leader',
  usage: 'schema',
  positionals: [],
  options: {},
  details: [
    'For a migration (pglock schema > migrations/0001_pglock_jobs.sql) or a pipe (pglock schema | psql). It connects to nothing; the DDL is idempotent.',
  ],
} as const satisfies CommandSpec;

/**
 * `pglock schema`: prints the DDL of `pglock_jobs`, the table behind `runOnce` and `leader`, for a
 * migration (`pglock schema > migrations/0001_pglock_jobs.sql`) or a pipe (`pglock schema | psql`).
 * It connects to nothing.
 */
export const schemaCommand = defineCommand(schemaSpec, (_args, io) => {
  io.stdout.write(`${JOBS_TABLE_DDL}\n`);
  return ExitCode.ok;
});
