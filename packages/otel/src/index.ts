/**
 * OpenTelemetry spans and metrics from pglock's `node:diagnostics_channel` lock events.
 *
 * @module @pglock/otel
 */

export { eventAttributes } from './attributes.ts';
export { instrumentPglock, type PglockInstrumentationOptions } from './instrument.ts';
