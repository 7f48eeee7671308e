import { connect, createServer, type Server, type Socket } from 'node:net';

/** A loopback TCP proxy in front of PostgreSQL that can go silent, like a cut network. */
export interface TcpProxy {
  /** `url` with host and port pointing at the proxy. */
  readonly url: string;
  /**
   * Stops forwarding bytes in both directions without closing any socket: no FIN, no RST. Each side
   * sees a peer that has gone quiet, as when a cable, NAT entry or firewall state disappears.
   */
  cut(): void;
  /** Resets (RST) every client-side socket at once: the client sees `ECONNRESET`, not a clean close. */
  reset(): void;
  close(): Promise<void>;
}

/**
 * Starts a {@link TcpProxy} to the host and port of `url`.
 *
 * @example
 * ```ts
 * import { startTcpProxy } from '@pglock/test-kit';
 * import pg from 'pg';
 *
 * const proxy = await startTcpProxy(process.env.DATABASE_URL!);
 * const pool = new pg.Pool({ connectionString: proxy.url });
 * proxy.cut();
 * ```
 */
export async function startTcpProxy(url: string): Promise<TcpProxy> {
  const target = new URL(url);
  const sockets = new Set<Socket>();
  const clients = new Set<Socket>();
  let silent = false;
  const server: Server = createServer((client) => {
    clients.add(client);
    client.on('close', () => clients.delete(client));
    const upstream = connect(Number(target.port || 5432), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => sockets.delete(socket));
    }
    // Bytes are dropped once cut; closes are not propagated either, so neither peer learns anything.
    client.on('data', (chunk) => silent || upstream.write(chunk));
    upstream.on('data', (chunk) => silent || client.write(chunk));
    client.on('end', () => silent || upstream.end());
    upstream.on('end', () => silent || client.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('proxy has no address');
  const proxied = new URL(url);
  proxied.hostname = '127.0.0.1';
  proxied.port = String(address.port);
  return {
    url: proxied.href,
    cut() {
      silent = true;
    },
    reset() {
      for (const client of clients) client.resetAndDestroy();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
