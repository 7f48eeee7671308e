import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { MeterProvider, type MetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { instrumentPglock } from '@pglock/otel';
import { advisoryLocks } from '@pglock/pg';
import pg from 'pg';

/** What the demo did, for the test. */
export interface DemoSummary {
  readonly rebuilds: number;
  readonly skippedReports: number;
}

/**
 * The pattern: wire the OpenTelemetry SDK, call `instrumentPglock` once at startup, and lock as
 * usual. Three workers rebuild the leaderboard under one lock (so two of them wait), a report job
 * finds its lock taken (contention), and a leader lock is held for a moment.
 */
export async function runTracingDemo(
  url: string,
  exporters: { readonly spans: SpanExporter; readonly metrics: MetricReader },
): Promise<DemoSummary> {
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(exporters.spans)],
  });
  const meterProvider = new MeterProvider({ readers: [exporters.metrics] });
  const stop = instrumentPglock({ tracerProvider, meterProvider });
  const pool = new pg.Pool({ connectionString: url, max: 6 });
  const otherInstance = new pg.Pool({ connectionString: url, max: 1 });
  const locks = advisoryLocks(pool);
  const tracer = tracerProvider.getTracer('example-otel-tracing');
  try {
    let rebuilds = 0;
    // Each worker's lock span nests under its own `rebuild` span.
    await Promise.all(
      [1, 2, 3].map((worker) =>
        tracer.startActiveSpan(`rebuild-leaderboard worker-${worker}`, async (span) => {
          await locks.withLock('leaderboard', async () => {
            rebuilds += 1;
            await new Promise((resolve) => setTimeout(resolve, 100));
          });
          span.end();
        }),
      ),
    );

    // Another instance of the app (its own pool) tries the report while this one runs it. On the same
    // pool, inside the callback, the call would nest in the running transaction and get the lock.
    let skippedReports = 0;
    await locks.withLock('nightly-report', async () => {
      const second = await advisoryLocks(otherInstance).tryWithLock('nightly-report', async () => 'ran');
      if (!second.acquired) skippedReports += 1;
    });

    const leader = await locks.acquireSessionLock('scheduler-leader');
    await new Promise((resolve) => setTimeout(resolve, 50));
    await leader.release();
    return { rebuilds, skippedReports };
  } finally {
    stop();
    await pool.end();
    await otherInstance.end();
    await tracerProvider.shutdown();
    await meterProvider.shutdown(); // exports the metrics once more, then stops
    trace.disable();
    context.disable();
  }
}
