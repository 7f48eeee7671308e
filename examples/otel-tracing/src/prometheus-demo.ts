import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { instrumentPglock } from '@pglock/otel';
import { advisoryLocks } from '@pglock/pg';
import pg from 'pg';

/** A running Prometheus demo: the scrape URL, and how to stop it. */
export interface PrometheusDemo {
  /** The scrape endpoint, `http://127.0.0.1:<port>/metrics`. */
  readonly url: string;
  /** Rounds of the workload done so far. */
  rounds(): number;
  /** Ends the workload, the pools and the endpoint. */
  stop(): Promise<void>;
}

/** Where the scrape endpoint listens. */
export interface PrometheusDemoOptions {
  /** Default 127.0.0.1: a scrape endpoint is for the local Prometheus or agent, not the world. */
  readonly host?: string;
  /** Default 9464, the exporter's registered port. */
  readonly port?: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * pglock's metrics on a Prometheus scrape endpoint: the OpenTelemetry `PrometheusExporter` is the meter
 * provider's reader and serves `/metrics`; `instrumentPglock` records into that provider. A small
 * workload keeps the metrics moving until `stop()`: three workers take turns on one key (waits), and
 * another instance tries it while held (contention, `busy`).
 *
 * @example
 * ```ts
 * const demo = await startPrometheusDemo(process.env.DATABASE_URL!, { port: 9464 });
 * console.log(`scrape ${demo.url}`);
 * // … on shutdown
 * await demo.stop();
 * ```
 */
export async function startPrometheusDemo(
  databaseUrl: string,
  options: PrometheusDemoOptions = {},
): Promise<PrometheusDemo> {
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? 9464;
  const exporter = new PrometheusExporter({ host, port, preventServerStart: true });
  await exporter.startServer();
  const meterProvider = new MeterProvider({ readers: [exporter] });
  const stopInstrumenting = instrumentPglock({ meterProvider });
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 });
  const otherInstance = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  const locks = advisoryLocks(pool);
  const other = advisoryLocks(otherInstance);
  let running = true;
  let rounds = 0;
  const workload = (async () => {
    while (running) {
      await Promise.all(
        [1, 2, 3].map(() => locks.withLock('leaderboard', () => sleep(20), { timeoutMs: 5_000 })),
      );
      await locks.withLock('nightly-report', async () => {
        await other.tryWithLock('nightly-report', async () => 'ran');
      });
      rounds += 1;
      await sleep(200);
    }
  })();
  return {
    url: `http://${host}:${port}/metrics`,
    rounds: () => rounds,
    async stop() {
      running = false;
      try {
        await workload;
      } finally {
        stopInstrumenting();
        await pool.end();
        await otherInstance.end();
        await meterProvider.shutdown(); // stops the exporter's server too
      }
    },
  };
}
