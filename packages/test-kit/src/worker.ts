// A worker process of the conformance suite, loaded through tsx (PGLOCK_WORKER_LOADER=tsx): imports
// the harness module by URL and runs one scenario (worker-main.ts). child.ts normally starts the
// bundle worker-bundle.ts builds instead, which needs no loader.
import type { AdapterHarness } from './harness.ts';
import { runWorker } from './worker-main.ts';

const [moduleUrl, exportName, scenario, argsJson] = process.argv.slice(2);
const url = process.env.DATABASE_URL;
if (!moduleUrl || !exportName || !scenario || !url)
  throw new Error('usage: worker <moduleUrl> <export> <scenario> <json>');
const harness = (await import(moduleUrl))[exportName] as AdapterHarness;
await runWorker(harness, url, scenario, JSON.parse(argsJson ?? '{}') as Record<string, unknown>);
