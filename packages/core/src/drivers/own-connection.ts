import type { PinnedConnection, PortConnection } from '../lock-port.ts';

/**
 * The {@link PinnedConnection} of a connection opened for one session lock alone (a driver whose
 * pool cannot destroy one connection on its own, as a `pg.Client`'s or postgres.js's): released by
 * closing it, whatever its state, so it never holds a lock for anyone after. `processID` is read
 * when core needs it, from the connection or else from `cancelKeyPid` (postgres.js learns its cancel
 * key with the first statement).
 *
 * @example
 * ```ts
 * import { openNodePostgresClient, nodePostgresConnection, pinOwnConnection } from '@pglock/core/drivers/node-postgres';
 *
 * const own = await openNodePostgresClient(client, (error) => onDeath(error));
 * const pinned = pinOwnConnection(nodePostgresConnection(own.client), own.end, () => own.client.processID);
 * ```
 */
export function pinOwnConnection(
  connection: PortConnection & { readonly processID?: number | undefined },
  end: () => Promise<void>,
  cancelKeyPid: () => number | null | undefined,
): PinnedConnection {
  return {
    ...connection,
    heartbeatOn: 'pinned',
    release: end,
    get processID() {
      return connection.processID ?? cancelKeyPid() ?? undefined;
    },
  };
}
