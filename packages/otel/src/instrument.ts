import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import {
  type Attributes,
  context,
  type MeterProvider,
  metrics,
  type Span,
  SpanStatusCode,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
import {
  type LockAcquiredEvent,
  type LockEventBase,
  type LockLostEvent,
  type LockNotAcquiredEvent,
  type LockReleasedEvent,
  lockChannels,
} from '@pglock/core';
import { eventAttributes } from './attributes.ts';

/** Options of {@link instrumentPglock}. */
export interface PglockInstrumentationOptions {
  /** Where spans go; default the global provider (`trace.getTracerProvider()`). */
  readonly tracerProvider?: TracerProvider;
  /** Where metrics go; default the global provider (`metrics.getMeterProvider()`). */
  readonly meterProvider?: MeterProvider;
  /**
   * Adds `pglock.name` to metric attributes. Off by default: names with an id in them
   * (`account:${id}`) would make one time series per id. Spans always carry the name.
   */
  readonly nameInMetrics?: boolean;
  /**
   * Most spans kept open for a release event, oldest ended first (default 10 000). A lock taken with
   * `lock(tx, …)` inside your own transaction is released by your COMMIT, which pglock does not see,
   * so its span is only ended here, with `pglock.outcome = "release-unobserved"`.
   */
  readonly maxOpenSpans?: number;
}

const SCOPE = '@pglock/otel';

/**
 * Subscribes to pglock's `node:diagnostics_channel` events and turns them into OpenTelemetry data:
 *
 * - one span `pglock.lock` per acquisition, from the request to the release (or to the failure),
 *   with an `acquired` event at the grant; attributes `pglock.key`, `pglock.name`,
 *   `pglock.namespace`, `pglock.scope`, `pglock.mode`, `pglock.outcome`;
 * - histograms `pglock.wait.duration` and `pglock.hold.duration` (ms), by scope, mode and outcome;
 * - counter `pglock.contention`: acquisitions that ended without the lock, by `pglock.reason`
 *   (`busy`, `timeout`, `aborted`, `deadlock`, `error`).
 *
 * Returns a function that unsubscribes (and ends spans still open).
 *
 * @example
 * ```ts
 * import { instrumentPglock } from '@pglock/otel';
 *
 * const stop = instrumentPglock(); // global providers, as set up by the OpenTelemetry SDK
 * // … on shutdown:
 * stop();
 * ```
 */
export function instrumentPglock(options: PglockInstrumentationOptions = {}): () => void {
  const tracer = (options.tracerProvider ?? trace.getTracerProvider()).getTracer(SCOPE);
  const meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter(SCOPE);
  const waitDuration = meter.createHistogram('pglock.wait.duration', {
    unit: 'ms',
    description: 'Time from a lock request to its grant or failure.',
  });
  const holdDuration = meter.createHistogram('pglock.hold.duration', {
    unit: 'ms',
    description: 'Time a lock was held, from its grant to its release or loss.',
  });
  const contention = meter.createCounter('pglock.contention', {
    description: 'Lock requests that ended without the lock, by reason.',
  });
  const maxOpen = options.maxOpenSpans ?? 10_000;
  const open = new Map<number, Span>();
  // When each open span's lock was granted (or refused), epoch ms: it ends that plus the hold.
  const grantedAt = new WeakMap<Span, number>();
  const metricAttributes = (event: LockEventBase, extra: Attributes): Attributes => {
    const { 'pglock.key': _key, 'pglock.key_count': _count, ...rest } = eventAttributes(event);
    if (!options.nameInMetrics) delete rest['pglock.name'];
    return { ...rest, ...extra };
  };
  const finish = (id: number, outcome: string, error?: unknown, failed = false, heldMs?: number) => {
    const span = open.get(id);
    if (!span) return;
    open.delete(id);
    span.setAttribute('pglock.outcome', outcome);
    if (failed) {
      if (error instanceof Error) span.recordException(error);
      span.setStatus({
        code: SpanStatusCode.ERROR,
        message: error instanceof Error ? error.message : outcome,
      });
    }
    // Ended at the grant plus the hold core measured, so that its duration is exactly the wait and
    // hold it reports (the SDK would end it on its own clock a little later); a span whose release
    // was not observed ends now.
    const granted = grantedAt.get(span);
    span.end(granted === undefined || heldMs === undefined ? Date.now() : granted + heldMs);
  };

  // The span is started when the wait ends, back-dated by the wait that core measured: its clock
  // starts when the call begins (before a pooled connection is checked out), before `requested`.
  // Epoch ms from Date.now(), the clock the SDK times other spans with: performance.timeOrigin +
  // performance.now() drifts from it by milliseconds in a long-lived process.
  const start = (event: LockAcquiredEvent | LockNotAcquiredEvent): Span => {
    const granted = Date.now();
    const span = tracer.startSpan(
      'pglock.lock',
      {
        attributes: { ...eventAttributes(event), 'pglock.wait_ms': event.waitMs },
        startTime: granted - event.waitMs,
      },
      // Publishing is synchronous, so this is the caller's context and the span nests under its request.
      context.active(),
    );
    grantedAt.set(span, granted);
    return span;
  };
  const handlers: Record<string, (message: unknown) => void> = {
    [lockChannels.acquired]: (message) => {
      const event = message as LockAcquiredEvent;
      waitDuration.record(event.waitMs, metricAttributes(event, { 'pglock.outcome': 'acquired' }));
      const span = start(event);
      span.addEvent('acquired', { 'pglock.wait_ms': event.waitMs });
      open.set(event.id, span);
      if (open.size > maxOpen) {
        const [oldest] = open.keys();
        if (oldest !== undefined) finish(oldest, 'release-unobserved');
      }
    },
    [lockChannels.notAcquired]: (message) => {
      const event = message as LockNotAcquiredEvent;
      waitDuration.record(event.waitMs, metricAttributes(event, { 'pglock.outcome': event.reason }));
      contention.add(1, metricAttributes(event, { 'pglock.reason': event.reason }));
      open.set(event.id, start(event));
      // Busy and timed out are answers, not faults; the others are errors of the call.
      const failed = event.reason === 'error' || event.reason === 'deadlock';
      finish(event.id, event.reason, event.error, failed, 0);
    },
    [lockChannels.released]: (message) => {
      const event = message as LockReleasedEvent;
      holdDuration.record(event.heldMs, metricAttributes(event, { 'pglock.outcome': 'released' }));
      open.get(event.id)?.setAttribute('pglock.hold_ms', event.heldMs);
      finish(event.id, 'released', undefined, false, event.heldMs);
    },
    [lockChannels.lost]: (message) => {
      const event = message as LockLostEvent;
      holdDuration.record(event.heldMs, metricAttributes(event, { 'pglock.outcome': 'lost' }));
      open.get(event.id)?.setAttribute('pglock.hold_ms', event.heldMs);
      finish(event.id, 'lost', event.error, true, event.heldMs);
    },
  };
  for (const [channel, handler] of Object.entries(handlers)) subscribe(channel, handler);
  let stopped = false;
  return () => {
    if (stopped) return;
    stopped = true;
    for (const [channel, handler] of Object.entries(handlers)) unsubscribe(channel, handler);
    for (const id of [...open.keys()]) finish(id, 'release-unobserved');
  };
}
