// Prints pglock's spans and metrics with the OpenTelemetry SDK's console exporters. With DATABASE_URL
// unset, it runs against an embedded PostgreSQL started (and removed) for this run.
import { ConsoleMetricExporter, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { ConsoleSpanExporter } from '@opentelemetry/sdk-trace-base';
import { devDatabase } from './dev-database.ts';
import { runTracingDemo } from './tracing-demo.ts';

const database = await devDatabase();
try {
  const summary = await runTracingDemo(database.url, {
    spans: new ConsoleSpanExporter(),
    // Exported at shutdown; the interval only matters for a long-running service.
    metrics: new PeriodicExportingMetricReader({
      exporter: new ConsoleMetricExporter(),
      exportIntervalMillis: 60_000,
    }),
  });
  console.log(
    `\n${summary.rebuilds} leaderboard rebuilds, ${summary.skippedReports} report run skipped (lock busy)`,
  );
} finally {
  await database.stop();
}
