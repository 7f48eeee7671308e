import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DevDatabase } from '../src/dev-database.ts';
import { startPrometheusDemo } from '../src/prometheus-demo.ts';
import { testDatabase } from './database.ts';

let database: DevDatabase;
beforeAll(async () => {
  database = await testDatabase();
});
afterAll(() => database?.stop());

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function scrape(url: string): Promise<{ type: string | null; body: string }> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return { type: response.headers.get('content-type'), body: await response.text() };
}

it('pglock metrics are scraped from the Prometheus endpoint on 127.0.0.1, under the names the README gives', async () => {
  const demo = await startPrometheusDemo(database.url, { port: await freePort() });
  try {
    expect(demo.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const deadline = Date.now() + 20_000;
    while (demo.rounds() < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const { type, body } = await scrape(demo.url);
    expect(type).toMatch(/^text\/plain/);
    expect(body).toContain('# TYPE pglock_wait_duration histogram');
    expect(body).toContain('# UNIT pglock_wait_duration ms');
    expect(body).toContain('# TYPE pglock_hold_duration histogram');
    expect(body).toContain('# TYPE pglock_contention_total counter');
    const waits = /^pglock_wait_duration_count\{[^}]*pglock_outcome="acquired"[^}]*\} (\d+)$/m.exec(body);
    expect(Number(waits?.[1])).toBeGreaterThanOrEqual(8); // 4 acquisitions a round
    expect(body).toMatch(/^pglock_wait_duration_bucket\{[^}]*le="\+Inf"[^}]*\} \d+$/m);
    expect(body).toMatch(/^pglock_hold_duration_sum\{[^}]*pglock_outcome="released"[^}]*\} [\d.]+$/m);
    const busy = /^pglock_contention_total\{[^}]*pglock_reason="busy"[^}]*\} (\d+)$/m.exec(body);
    expect(Number(busy?.[1])).toBeGreaterThanOrEqual(2); // one busy try a round
  } finally {
    await demo.stop();
  }
  await expect(fetch(demo.url)).rejects.toThrow(); // the endpoint is closed with the demo
});

it('`npm run start:prometheus` serves the endpoint until it is stopped', async () => {
  const port = await freePort();
  const main = fileURLToPath(new URL('../src/prometheus-main.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', main, '--port', String(port)], {
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
  const closed = new Promise((resolve) => child.once('close', resolve));
  try {
    const deadline = Date.now() + 30_000;
    let body = '';
    while (!body.includes('pglock_contention_total{') && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      body = await fetch(`http://127.0.0.1:${port}/metrics`)
        .then((r) => r.text())
        .catch(() => '');
    }
    expect(body, out).toContain('pglock_contention_total{');
    expect(out).toContain(`curl http://127.0.0.1:${port}/metrics`);
  } finally {
    child.kill('SIGTERM');
  }
  expect(await closed, out).toBe(0);
  expect(out).toMatch(/\d+ rounds of the workload/);
});
