import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  type DataPoint,
  type Histogram,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { acquireSessionLock, deriveKey, isLocked, tryWithLock, withLock } from '@pglock/pg';
import { Backdoor } from '@pglock/test-kit';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { instrumentPglock } from '../src/index.ts';

const url = inject('databaseUrl');
let pool: pg.Pool;
let other: pg.Pool;
let backdoor: Backdoor;
const spans = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const reader = new PeriodicExportingMetricReader({
  exporter: metricExporter,
  exportIntervalMillis: 3_600_000,
});
const meterProvider = new MeterProvider({ readers: [reader] });
let stop: () => void;

beforeAll(async () => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  pool = new pg.Pool({ connectionString: url, max: 2 });
  pool.on('error', () => undefined);
  other = new pg.Pool({ connectionString: url, max: 2 });
  backdoor = await Backdoor.open(url);
});
afterAll(async () => {
  await Promise.all([pool.end(), other.end(), backdoor.close(), meterProvider.shutdown()]);
  context.disable();
});
beforeEach(() => {
  stop = instrumentPglock({ tracerProvider, meterProvider });
});
afterEach(() => {
  stop();
  spans.reset();
});

/** Data points of one metric, filtered to one lock name (set `nameInMetrics` in the test). */
async function points(metric: string, name: string): Promise<DataPoint<unknown>[]> {
  metricExporter.reset();
  await reader.forceFlush();
  const found = metricExporter
    .getMetrics()
    .flatMap((r) => r.scopeMetrics)
    .flatMap((s) => s.metrics)
    .filter((m) => m.descriptor.name === metric);
  return found
    .flatMap((m) => m.dataPoints as DataPoint<unknown>[])
    .filter((p) => p.attributes['pglock.name'] === name);
}
const lockSpans = (name: string) =>
  spans.getFinishedSpans().filter((s) => s.attributes['pglock.name'] === name);

describe('instrumentPglock', () => {
  it('a withLock call gives one span from request to release, nested in the caller span, and wait/hold histograms', async () => {
    stop();
    stop = instrumentPglock({ tracerProvider, meterProvider, nameInMetrics: true });
    const name = `otel:${Math.random()}`;
    const tracer = tracerProvider.getTracer('test');
    await tracer.startActiveSpan('job', async (parent) => {
      await withLock(pool, name, () => new Promise((resolve) => setTimeout(resolve, 30)), {
        namespace: 'ops',
      });
      parent.end();
    });
    const [span] = lockSpans(name);
    const job = spans.getFinishedSpans().find((s) => s.name === 'job');
    expect(span?.name).toBe('pglock.lock');
    expect(span?.attributes).toMatchObject({
      'pglock.key': String(deriveKey(name, 'ops')),
      'pglock.name': name,
      'pglock.namespace': 'ops',
      'pglock.scope': 'transaction',
      'pglock.mode': 'exclusive',
      'pglock.outcome': 'released',
    });
    expect(span?.attributes['pglock.hold_ms'] as number).toBeGreaterThanOrEqual(25);
    expect(span?.events.map((e) => e.name)).toEqual(['acquired']);
    // The span covers the wait and the hold, exactly: it ends at the grant plus the hold.
    const durationMs = span!.duration[0] * 1_000 + span!.duration[1] / 1e6;
    const { 'pglock.wait_ms': waitMs, 'pglock.hold_ms': holdMs } = span!.attributes as Record<string, number>;
    expect(Math.abs(durationMs - (waitMs! + holdMs!))).toBeLessThan(0.01);
    expect(span?.parentSpanContext?.spanId).toBe(job?.spanContext().spanId);
    expect(span?.parentSpanContext?.traceId).toBe(job?.spanContext().traceId);

    const [wait] = await points('pglock.wait.duration', name);
    expect(wait?.attributes).toMatchObject({ 'pglock.outcome': 'acquired', 'pglock.scope': 'transaction' });
    expect((wait!.value as Histogram).count).toBe(1);
    const [hold] = await points('pglock.hold.duration', name);
    expect(hold?.attributes).toMatchObject({ 'pglock.outcome': 'released' });
    expect((hold!.value as Histogram).sum).toBeGreaterThanOrEqual(25);
  });

  it('contention: a busy try and a timed-out wait end their spans with the reason and count pglock.contention', async () => {
    stop();
    stop = instrumentPglock({ tracerProvider, meterProvider, nameInMetrics: true });
    const name = `otel-busy:${Math.random()}`;
    let release!: () => void;
    const holding = withLock(other, name, () => new Promise<void>((resolve) => (release = resolve)));
    await backdoor.waitFor('the holder', () => isLocked(pool, name));
    expect(await tryWithLock(pool, name, async () => 'x')).toEqual({ acquired: false });
    await expect(withLock(pool, name, async () => 'x', { timeoutMs: 50 })).rejects.toThrow(/not granted/);
    release();
    await holding;
    const outcomes = lockSpans(name).map((s) => s.attributes['pglock.outcome']);
    expect(outcomes).toEqual(['busy', 'timeout', 'released']);
    const counted = await points('pglock.contention', name);
    expect(counted.map((p) => [p.attributes['pglock.reason'], p.value]).sort()).toEqual([
      ['busy', 1],
      ['timeout', 1],
    ]);
  });

  it('a lost session lock ends its span with an error status, outcome "lost" and a hold time', async () => {
    const name = `otel-lost:${Math.random()}`;
    const lock = await acquireSessionLock(pool, name, { heartbeatMs: 100, shared: true });
    const lost = new Promise((resolve) => lock.signal.addEventListener('abort', resolve, { once: true }));
    await backdoor.query('SELECT pg_terminate_backend($1)', [lock.pid]);
    await lost;
    const [span] = lockSpans(name);
    expect(span?.attributes).toMatchObject({
      'pglock.scope': 'session',
      'pglock.mode': 'shared',
      'pglock.outcome': 'lost',
    });
    expect(span?.status.code).toBe(2); // SpanStatusCode.ERROR
    expect(span?.events.map((e) => e.name)).toEqual(['acquired', 'exception']);
    // Without nameInMetrics the metrics carry no name (one series per scope/mode/outcome).
    expect(await points('pglock.hold.duration', name)).toEqual([]);
  });

  it('the returned function unsubscribes: later locks make no spans', async () => {
    stop();
    const name = `otel-off:${Math.random()}`;
    await withLock(pool, name, async () => undefined);
    expect(lockSpans(name)).toEqual([]);
    expect(trace.getActiveSpan()).toBeUndefined();
  });
});
