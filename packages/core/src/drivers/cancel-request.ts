import { connect } from 'node:net';
/** The cancel key and address of one connection, as drivers learn them at connect. */
export interface CancelKey {
  readonly processID?: number | null | undefined;
  readonly secretKey?: number | null | undefined;
  readonly host?: string | undefined;
  readonly port?: number | undefined;
}

const CANCEL_REQUEST_CODE = 80877102;

/**
 * Sends PostgreSQL's protocol CancelRequest for `client`'s running statement, on a new socket, and
 * resolves once the server has read it and closed that socket. Unlike node-postgres's
 * `query_timeout` (client-side only: the server keeps waiting and may later grant the lock), this
 * stops the wait on the server. Through PgBouncer the key is the pooler's, and PgBouncer forwards
 * the cancel to the right server connection, which `pg_cancel_backend(processID)` would not.
 */
export function sendCancelRequest(client: CancelKey, timeoutMs = 5_000): Promise<void> {
  const { processID, secretKey } = client;
  if (typeof processID !== 'number' || typeof secretKey !== 'number') {
    return Promise.reject(
      new Error('The connection has no cancel key (processID/secretKey); it cannot be cancelled.'),
    );
  }
  const host = client.host ?? 'localhost';
  const port = client.port ?? 5432;
  return new Promise((resolve, reject) => {
    const socket = host.startsWith('/') ? connect(`${host}/.s.PGSQL.${port}`) : connect(port, host);
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error('cancel request timed out')));
    socket.once('connect', () => {
      const message = Buffer.alloc(16);
      message.writeInt32BE(16, 0);
      message.writeInt32BE(CANCEL_REQUEST_CODE, 4);
      message.writeInt32BE(processID, 8);
      message.writeInt32BE(secretKey, 12);
      // Written without ending our side: PgBouncer drops a cancel whose client hangs up before it has
      // forwarded it; both PostgreSQL and PgBouncer close the socket once the request is handled.
      socket.write(message);
    });
    socket.once('error', reject);
    socket.once('end', () => socket.end());
    socket.once('close', (hadError) => {
      if (!hadError) resolve();
    });
    socket.resume();
  });
}
