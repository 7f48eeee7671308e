// `npm run start:prometheus [-- --port 9464] [-- --seconds 30]`: pglock's metrics on a Prometheus scrape
// endpoint at http://127.0.0.1:9464/metrics while a small workload runs, until Ctrl-C (or --seconds).
// With DATABASE_URL unset, it runs against an embedded PostgreSQL started (and removed) for this run.
import { parseArgs } from 'node:util';
import { devDatabase } from './dev-database.ts';
import { startPrometheusDemo } from './prometheus-demo.ts';

const { values } = parseArgs({
  args: process.argv.slice(2).filter((arg) => arg !== '--'),
  options: { port: { type: 'string', default: '9464' }, seconds: { type: 'string' } },
});
const database = await devDatabase();
try {
  const demo = await startPrometheusDemo(database.url, { port: Number(values.port) });
  console.log(
    `pglock metrics: curl ${demo.url}   (${values.seconds ? `${values.seconds} s` : 'Ctrl-C stops'})`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
    if (values.seconds) setTimeout(resolve, Number(values.seconds) * 1_000);
  });
  await demo.stop();
  console.log(`${demo.rounds()} rounds of the workload`);
} finally {
  await database.stop();
}
