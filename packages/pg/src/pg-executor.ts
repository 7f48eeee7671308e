import type { LockExecutor } from '@pglock/core';
import { sendCancelRequest } from './cancel-request.ts';
import type { PgClientLike } from './pg-types.ts';

/**
 * Runs core's statements on one node-postgres client; a wait is cancelled with a protocol
 * CancelRequest, so `signal` costs no extra round trip.
 */
export function pgExecutor(client: PgClientLike): LockExecutor {
  return {
    query: async (statement) => (await client.query(statement.text, [...statement.values])).rows,
    cancel: () => sendCancelRequest(client),
  };
}
