import { sqlStateOf } from '@pglock/core/adapter';
import { connectionError, connectionTarget, openPool, permissionError } from '../connection.ts';
import { ExitCode } from '../exit-codes.ts';
import { styleFor } from '../format.ts';
import { formatJobsReport } from '../format-jobs.ts';
import { type JobsReport, readJobsReport } from '../jobs-report.ts';
import { type CommandSpec, defineCommand } from '../parse-command.ts';

const jobsSpec = {
  name: 'jobs',
  summary: 'runOnce jobs (schedule, last run, next due) and leaders (term, identity, holder)',
  usage: 'jobs [--json] [--namespace ns] [--url url]',
  positionals: [],
  options: {
    json: { type: 'boolean', description: 'print JSON' },
    namespace: { type: 'string', short: 'n', value: 'ns', description: 'only the names of this namespace' },
    url: { type: 'string', value: 'url', description: 'PostgreSQL URL (default: DATABASE_URL)' },
  },
  details: [
    'Reads pglock_jobs (one row per runOnce job or leader name) with the holder of each name’s lock from pg_locks, in one statement. It shows the columns the table has: a table from an older pglock shows less.',
    'A leader whose lock nobody holds shows "none": its last term ended and no campaign has won since.',
  ],
} as const satisfies CommandSpec;

/** `pglock jobs [--json] [--namespace ns] [--url url]`. */
export const jobsCommand = defineCommand(jobsSpec, async ({ values }, io) => {
  const target = connectionTarget(values.url, io.env);
  const pool = await openPool(target, { applicationName: 'pglock jobs' });
  try {
    let report: JobsReport;
    try {
      report = await readJobsReport(pool, { namespace: values.namespace });
    } catch (error) {
      if (sqlStateOf(error) === '42501') throw permissionError(error);
      throw connectionError(error, target);
    }
    if (values.json) io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    else io.stdout.write(formatJobsReport(report, styleFor(io.stdout, io.env)));
  } finally {
    await pool.end();
  }
  return ExitCode.ok;
});
