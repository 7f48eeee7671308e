// `pnpm chaos [--seconds 60] [--processes 12] [--no-faults]`: a chaos run against DATABASE_URL (a superuser URL),
// or against a throwaway embedded PostgreSQL when it is unset, plus one worker per adapter through a
// PgBouncer in transaction mode when PgBouncer is installed. Exits 1 on any violation, hang or crash
// (the one excuse: a postgres.js write-timer crash whose fatal write was the ORM's own COMMIT/ROLLBACK).
import { parseArgs } from 'node:util';
import { startEmbeddedServer } from '@pglock/test-kit';
import { runChaos } from './chaos.ts';
import { chaosPassed, formatChaos } from './chaos-report.ts';
import { generatePrismaClient } from './prisma/generate.ts';

// `pnpm chaos -- --seconds 20` hands the script a leading `--` (pnpm passes it through): skip it.
const argv = process.argv.slice(2);
const { values } = parseArgs({
  args: argv[0] === '--' ? argv.slice(1) : argv,
  options: {
    seconds: { type: 'string', default: '60' },
    processes: { type: 'string', default: '12' },
    'no-faults': { type: 'boolean', default: false },
  },
});
const seconds = Number(values.seconds);
const processes = Number(values.processes);
if (!(seconds > 0) || !Number.isInteger(processes) || processes < 1) {
  throw new Error('usage: pnpm chaos [--seconds N] [--processes N]');
}
await generatePrismaClient();
const server = process.env.DATABASE_URL ? undefined : await startEmbeddedServer();
try {
  const url = process.env.DATABASE_URL ?? (server?.url as string);
  console.log(
    `chaos: ${processes} processes, and one per adapter through PgBouncer, for ${seconds} s against ${new URL(url).host}`,
  );
  const result = await runChaos({ url, seconds, processes, faults: !values['no-faults'], log: console.log });
  console.log(formatChaos(result));
  process.exitCode = chaosPassed(result) ? 0 : 1;
} finally {
  await server?.stop();
}
