import { JOBS_TABLE_DDL, JOBS_TABLE_UPGRADE_DDL } from '@pglock/core';
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
    'After the CREATE TABLE comes the upgrade of a table an older pglock created (ALTER TABLE … ADD COLUMN IF NOT EXISTS): a no-op on a new table.',
  ],
} as const satisfies CommandSpec;

/**
 * What `pglock schema` prints: the table's DDL, then the upgrade of one an older pglock created (a
 * no-op on the new table), so that the same output creates a table or brings one up to date.
 */
const SCHEMA_SQL = `${JOBS_TABLE_DDL}
-- A table created by an older pglock (before per_ms, identity): add what runOnce and leader need (a no-op on the table above).
${JOBS_TABLE_UPGRADE_DDL}
`;

/**
 * `pglock schema`: prints the DDL of `pglock_jobs`, the table behind `runOnce` and `leader`, and the
 * upgrade of an older one, for a migration (`pglock schema > migrations/0001_pglock_jobs.sql`) or a
 * pipe (`pglock schema | psql`). It connects to nothing.
 */
export const schemaCommand = defineCommand(schemaSpec, (_args, io) => {
  io.stdout.write(SCHEMA_SQL);
  return ExitCode.ok;
});
