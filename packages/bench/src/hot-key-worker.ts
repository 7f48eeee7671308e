// One worker process of the hot-key scenario. The parent (hot-key.ts) forks it once per run and
// tells it, over the IPC channel, which design to open and when to start and stop; it answers with
// the stamps of every lock cycle.
import { nowUs, type Stamps, stamps } from './clock.ts';
import { HOT_KEY } from './database.ts';
import { type DesignSession, designs } from './designs.ts';
import type { ToParent, ToWorker } from './hot-key-messages.ts';

let session: DesignSession | undefined;
let loops = 1;

function send(message: ToParent): void {
  process.send?.(message);
}

async function run(until: number, startAt: number, key: bigint, row: number): Promise<void> {
  const cycles: [number, number, number, number][] = [];
  let errors = 0;
  let firstError: string | undefined;
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, (startAt - nowUs()) / 1_000)));
  const cpu = process.cpuUsage();
  await Promise.all(
    Array.from({ length: loops }, async (_, loop) => {
      while (nowUs() < until) {
        const s: Stamps = stamps();
        try {
          await session!.cycle(row, key, s);
          cycles.push([loop, s.arrival, s.acquired, s.released]);
        } catch (error) {
          errors++;
          firstError ??= String(error);
        }
      }
    }),
  );
  const used = process.cpuUsage(cpu);
  send({ type: 'done', cycles, errors, firstError, cpuUs: used.user + used.system });
}

process.on('message', (message: ToWorker) => {
  const handle = async (): Promise<void> => {
    switch (message.type) {
      case 'open': {
        loops = message.loops;
        session = await designs[message.design]!.open(message.url, message.loops);
        // One uncontended cycle per loop on keys and a row of its own first: connections,
        // authentication and the first-call costs (JIT, module paths) stay out of the measured window.
        await Promise.all(
          Array.from({ length: loops }, (_, loop) =>
            session!.cycle(message.worker + 1, HOT_KEY + 1n + BigInt(message.worker * 64 + loop), stamps()),
          ),
        );
        const pid = loops === 1 && session.backendPid ? await session.backendPid() : undefined;
        send({ type: 'ready', pid });
        return;
      }
      case 'go':
        await run(message.until, message.startAt, BigInt(message.key), message.row);
        return;
      case 'close':
        await session?.close();
        session = undefined;
        send({ type: 'closed' });
        return;
      case 'exit':
        process.exit(0);
    }
  };
  handle().catch((error: unknown) => {
    send({ type: 'failed', error: String(error) });
  });
});
send({ type: 'started' });
