import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  AggregationTemporality,
  type DataPoint,
  type Histogram,
  InMemoryMetricExporter,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DevDatabase } from '../src/dev-database.ts';
import { runTracingDemo } from '../src/tracing-demo.ts';
import { testDatabase } from './database.ts';

let database: DevDatabase;
beforeAll(async () => {
  database = await testDatabase();
});
afterAll(() => database?.stop());

it('the demo produces a lock span per acquisition, nested in its caller, and wait/hold/contention metrics', async () => {
  // The demo shuts its provider down, and InMemorySpanExporter forgets its spans on shutdown.
  const finished: ReadableSpan[] = [];
  const spans: SpanExporter = {
    export: (batch, done) => {
      finished.push(...batch);
      done({ code: 0 });
    },
    shutdown: async () => undefined,
  };
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const metrics = new PeriodicExportingMetricReader({
    exporter: metricExporter,
    exportIntervalMillis: 60_000,
  });
  const summary = await runTracingDemo(database.url, { spans, metrics });
  expect(summary).toEqual({ rebuilds: 3, skippedReports: 1 });

  const locks = finished.filter((s) => s.name === 'pglock.lock');
  const outcomes = (name: string) =>
    locks.filter((s) => s.attributes['pglock.name'] === name).map((s) => s.attributes['pglock.outcome']);
  expect(outcomes('leaderboard')).toEqual(['released', 'released', 'released']);
  expect(outcomes('nightly-report').sort()).toEqual(['busy', 'released']);
  expect(outcomes('scheduler-leader')).toEqual(['released']);
  for (const span of locks.filter((s) => s.attributes['pglock.name'] === 'leaderboard')) {
    const parent = finished.find((s) => s.spanContext().spanId === span.parentSpanContext?.spanId);
    expect(parent?.name).toMatch(/^rebuild-leaderboard worker-/);
  }

  const all = metricExporter.getMetrics().flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics));
  const last = (name: string) =>
    all.filter((m) => m.descriptor.name === name).at(-1)?.dataPoints as DataPoint<unknown>[];
  const acquiredWaits = last('pglock.wait.duration').find(
    (p) => p.attributes['pglock.outcome'] === 'acquired' && p.attributes['pglock.scope'] === 'transaction',
  );
  expect((acquiredWaits!.value as Histogram).count).toBeGreaterThanOrEqual(4);
  // Two workers waited for the first one's 100 ms hold.
  expect((acquiredWaits!.value as Histogram).max).toBeGreaterThanOrEqual(80);
  expect(last('pglock.contention').map((p) => [p.attributes['pglock.reason'], p.value])).toEqual([
    ['busy', 1],
  ]);
  expect(last('pglock.hold.duration').some((p) => p.attributes['pglock.scope'] === 'session')).toBe(true);
});

it('`pnpm start` runs and prints spans and metrics with the console exporters', async () => {
  const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', main], {
    env: { ...process.env, DATABASE_URL: database.url },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (chunk) => {
    out += String(chunk);
  });
  child.stderr.on('data', (chunk) => {
    out += String(chunk);
  });
  const code = await new Promise((resolve) => child.once('close', resolve));
  expect(code, out).toBe(0);
  expect(out).toContain("name: 'pglock.lock'");
  expect(out).toContain("'pglock.outcome': 'busy'");
  expect(out).toContain('pglock.wait.duration');
  expect(out).toContain('3 leaderboard rebuilds, 1 report run skipped');
});
