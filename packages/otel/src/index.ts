export { eventAttributes } from './attributes.ts';
export { instrumentPglock, type PglockInstrumentationOptions } from './instrument.ts';
