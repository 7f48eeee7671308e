// One worker process of the hot-key scenario. The parent (hot-key.ts) forks it once per run and
// tells it, over the IPC channel, which design to open and when to start and stop; it answers with
// the stamps of every lock cycle. Started with `--conditions=@pglock/source --import tsx`.
import { nowUs, type Stamps, stamps } from './clock.ts';
import { HOT_KEY } from './database.ts';
import { type DesignSession, designs } from './designs.ts';
import type { ToParent, ToWorker } from './hot-key-messages.ts';

let session: DesignSession | undefined;

function send(message: ToParent): void {
  process.send?.(message);
}

async function run(until: number, startAt: number, key: bigint, row: number): Promise<void> {
  const cycles: Stamps[] = [];
  let errors = 0;
  let firstError: string | undefined;
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, (startAt - nowUs()) / 1_000)));
  while (nowUs() < until) {
    const s = stamps();
    try {
      await session!.cycle(row, key, s);
      cycles.push(s);
    } catch (error) {
      errors++;
      firstError ??= String(error);
    }
  }
  send({ type: 'done', cycles: cycles.map((c) => [c.arrival, c.acquired, c.released]), errors, firstError });
}

process.on('message', (message: ToWorker) => {
  const handle = async (): Promise<void> => {
    switch (message.type) {
      case 'open':
        session = await designs[message.design]!.open(message.url, 1);
        // One uncontended cycle on a key and row of its own first: connection, authentication and
        // the first-call costs (JIT, module paths) stay out of the measured window.
        await session.cycle(message.worker + 1, HOT_KEY + 1n + BigInt(message.worker), stamps());
        send({ type: 'ready' });
        return;
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
