import { once } from 'node:events';
import { type AddressInfo, createServer } from 'node:net';

/**
 * A TCP port that is free on 127.0.0.1 right now: the OS picks it for a probe that closes at once.
 *
 * @example
 * ```ts
 * const port = await freePort();
 * ```
 */
export async function freePort(): Promise<number> {
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
