// One "API instance": a Node process of its own, on one adapter. Rebuilds the leaderboard on a timer
// (skipping while another instance rebuilds), applies score updates per user, fires the digest job
// (once per period across the fleet) and campaigns for leadership of the scheduler, until the
// controller's end time. Lock events come from pglock's diagnostics channels and go to the controller
// over IPC.

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
  DIGEST_CRON,
  DIGEST_JOB,
  type InstanceConfig,
  type InstanceMessage,
  type LockEventKind,
  REBUILD_LOCK,
  SCHEDULER,
} from './protocol.ts';
import { runScheduler } from './scheduler.ts';

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

const onHeld = (rebuildId: number) => send({ type: 'rebuild-held', rebuildId, at: now() });
// Below Prisma's 5 s interactive-transaction timeout, with the 400 ms rebuild on top.
const REBUILD_NOW_TIMEOUT_MS = 2_000;

const adapter = await (await loadAdapter(config.adapter))(config);
const start = new Promise<number>((resolve) => {
  process.on('message', (message: ControllerMessage) => {
    if (message.type === 'start') resolve(message.endAt);
    else if (message.type === 'rebuild-now') void rebuildNow();
  });
});
send({ type: 'ready' });
const endAt = await start;

/** Asked by the controller (this instance leads at the kill time): one rebuild that waits for the lock. */
async function rebuildNow(): Promise<void> {
  const rebuilt = await adapter.rebuild(lockName(REBUILD_LOCK), onHeld, REBUILD_NOW_TIMEOUT_MS);
  send({ type: rebuilt ? 'rebuilt' : 'skipped' });
}

async function rebuildLoop(): Promise<void> {
  await sleep(randomInt(config.rebuildEveryMs)); // instances do not start in lockstep
  while (Date.now() < endAt) {
    const rebuilt = await adapter.rebuild(lockName(REBUILD_LOCK), onHeld);
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

// Every instance fires the digest on its own timer, far more often than its period: runOnce lets one
// call per period run it, whoever comes first.
async function digestLoop(): Promise<void> {
  const every = config.digestEveryMs;
  await sleep(randomInt(every));
  while (Date.now() < endAt) {
    const outcome = await adapter.digest(lockName(DIGEST_JOB), DIGEST_CRON);
    send({ type: 'digest', outcome, at: now() });
    await sleep(every / 2 + randomInt(every));
  }
}

// Every instance campaigns; the elected one runs the scheduler until its term ends. The name is
// fixed for the whole campaign (with --no-lock, one of its own per instance).
const schedulerName = lockName(SCHEDULER);
const campaign = adapter.leader(schedulerName, {
  retryMs: 200,
  // Who leads, stored with each term (currentLeader and `pglock jobs` show it).
  identity: config.label,
  onElected: async (election) => {
    send({ type: 'elected', term: election.term, at: now() });
    try {
      await runScheduler(
        {
          pool: adapter.pool,
          instance: config.label,
          name: schedulerName,
          namespace: config.namespace,
          tickMs: config.tickMs,
        },
        election,
      );
    } finally {
      send({ type: 'term-ended', term: election.term, at: now() });
    }
  },
  onError: (error) => send({ type: 'leader-error', message: String(error) }),
});

// Each job is a loop until endAt; then the campaign resigns (a standby may take over for the last
// moments) and the pools close.
await Promise.all([rebuildLoop(), updateLoop(), digestLoop()]);
await campaign.stop();
await adapter.close();
// IPC messages go out in order: once 'bye' is flushed, every counter before it has arrived.
process.send({ type: 'bye' } satisfies InstanceMessage, () => process.exit(0));
