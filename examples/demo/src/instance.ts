// One "API instance": a Node process of its own, on one adapter. Rebuilds the leaderboard on a timer
// (skipping while another instance rebuilds) and applies score updates per user, until the controller's
// end time. Lock events come from pglock's diagnostics channels and go to the controller over IPC.

import { randomInt } from 'node:crypto';
import { subscribe } from 'node:diagnostics_channel';
import {
  type LockAcquiredEvent,
  type LockEventBase,
  type LockNotAcquiredEvent,
  lockChannels,
} from '@pglock/core';
import { sleep } from './adapters/demo-adapter.ts';
import { loadAdapter } from './adapters/index.ts';
import {
  type ControllerMessage,
  type InstanceConfig,
  type InstanceMessage,
  type LockEventKind,
  REBUILD_LOCK,
} from './protocol.ts';

const raw = process.env.PGLOCK_DEMO_INSTANCE;
if (!raw || !process.send) throw new Error('instance.ts is started by main.ts (with an IPC channel)');
const config = JSON.parse(raw) as InstanceConfig;
const send = (message: InstanceMessage) => process.send?.(message);
const now = () => performance.timeOrigin + performance.now();

function forward(channel: string, event: LockEventKind): void {
  subscribe(channel, (message) => {
    const lock = message as LockEventBase & Partial<LockAcquiredEvent & LockNotAcquiredEvent>;
    send({ type: 'lock', event, id: lock.id, name: lock.names[0] ?? '?', at: now(), waitMs: lock.waitMs });
  });
}
forward(lockChannels.requested, 'requested');
forward(lockChannels.acquired, 'acquired');
forward(lockChannels.notAcquired, 'not-acquired');
forward(lockChannels.released, 'released');

// --no-lock (debug): every call gets a name of its own (across instances too), so the "lock" excludes nobody.
let unique = 0;
const lockName = (name: string) => (config.lock ? name : `${name}/unlocked-${config.index}-${unique++}`);

const adapter = await (await loadAdapter(config.adapter))(config);
const start = new Promise<ControllerMessage>((resolve) => process.once('message', resolve));
send({ type: 'ready' });
const { endAt } = await start;

async function rebuildLoop(): Promise<void> {
  await sleep(randomInt(config.rebuildEveryMs)); // instances do not start in lockstep
  while (Date.now() < endAt) {
    const rebuilt = await adapter.rebuild(lockName(REBUILD_LOCK), (rebuildId) =>
      send({ type: 'rebuild-held', rebuildId, at: now() }),
    );
    send({ type: rebuilt ? 'rebuilt' : 'skipped' });
    await sleep(config.rebuildEveryMs + randomInt(config.rebuildEveryMs / 2));
  }
}

async function updateLoop(): Promise<void> {
  while (Date.now() < endAt) {
    const userId = 1 + randomInt(config.users);
    await adapter.addPoint(lockName(`user:${userId}`), userId);
    send({ type: 'updated' });
  }
}

// Each job is a loop until endAt. The scheduling jobs come next, each as one more loop here over one
// more DemoAdapter method, with its row in verify.ts: a once-per-period job (the factory's runOnce)
// and a leader that runs the scheduler (the factory's leader).
await Promise.all([rebuildLoop(), updateLoop()]);
await adapter.close();
// IPC messages go out in order: once 'bye' is flushed, every counter before it has arrived.
process.send({ type: 'bye' } satisfies InstanceMessage, () => process.exit(0));
