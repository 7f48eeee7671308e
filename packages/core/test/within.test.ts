import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { within } from '../src/run-cancellable.ts';

// `within` bounds every wait for an answer pglock cannot cancel (a heartbeat, a control connection).
// Its deadline must not fire on an answer that arrived while the process was not running: Node runs
// expired timers before it reads sockets, so a stalled process would otherwise call a healthy
// connection dead (a session lock reported lost on a loaded CI machine).

/** Blocks the event loop for `ms`, as a long synchronous task or a descheduled process does. */
function stall(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy: nothing else runs
  }
}

let server: Server;
let port = 0;
beforeAll(async () => {
  // An echo server on the loopback: a real socket, so the answer is read in the loop's I/O phase.
  server = createServer((socket) => socket.on('data', (chunk) => socket.write(chunk)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** A connected socket and a function that sends a line and resolves with its echo. */
async function echo(): Promise<{ socket: Socket; ask: (line: string) => Promise<string> }> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  const ask = (line: string) =>
    new Promise<string>((resolve) => {
      socket.once('data', (chunk) => resolve(String(chunk)));
      socket.write(line);
    });
  return { socket, ask };
}

describe('within', () => {
  it('resolves with the value that came in time', async () => {
    expect(await within(Promise.resolve(7), 50, 'late')).toBe(7);
  });

  it('rejects with the message once ms passed without an answer, and hands a late value to onLate', async () => {
    let resolveLate: (value: string) => void = () => undefined;
    const never = new Promise<string>((resolve) => {
      resolveLate = resolve;
    });
    const handedBack: string[] = [];
    const started = performance.now();
    const error = await within(never, 60, 'no answer', (value) => handedBack.push(value)).catch(
      (e: unknown) => e,
    );
    expect(String(error)).toBe('Error: no answer');
    expect(performance.now() - started).toBeGreaterThanOrEqual(55);
    resolveLate('late connection');
    await new Promise((resolve) => setImmediate(resolve));
    expect(handedBack).toEqual(['late connection']);
  });

  it('an answer that arrived on a socket while the process stalled past the deadline wins', async () => {
    const { socket, ask } = await echo();
    try {
      const answer = within(ask('ping'), 50, 'no answer');
      // The echo is back within a millisecond; the process reads it only after the stall, in the
      // same turn of the loop as the expired timer.
      stall(200);
      expect(await answer).toBe('ping');
    } finally {
      socket.destroy();
    }
  });

  it('a stall longer than half the budget is not charged to the other side: an answer after it, within ms more, wins', async () => {
    const slow = new Promise<string>((resolve) => setTimeout(() => resolve('slow'), 260));
    const answer = within(slow, 100, 'no answer');
    stall(200);
    // Deadline 100 ms, fired at 200 ms: the other side gets the 100 ms it missed, up to 300 ms.
    expect(await answer).toBe('slow');
  });

  it('the extension is granted once and bounded by ms: a side that still does not answer is timed out', async () => {
    const never = new Promise<string>(() => undefined);
    const started = performance.now();
    const answer = within(never, 80, 'no answer').catch((e: unknown) => e);
    stall(400);
    const error = await answer;
    const took = performance.now() - started;
    expect(String(error)).toBe('Error: no answer');
    // Fired at 400 ms, extended by at most 80: well before a second budget of the stall's length.
    expect(took).toBeLessThan(400 + 80 + 300);
  });
});
