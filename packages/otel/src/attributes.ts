import type { Attributes } from '@opentelemetry/api';
import type { LockEventBase, LockKey } from '@pglock/core';

/**
 * The span attributes of a lock event: `pglock.key` (the bigint as decimal text, a pair as `a,b`;
 * several keys joined with a space), `pglock.name` and `pglock.namespace` when the keys came from
 * names, `pglock.scope`, `pglock.mode`, and `pglock.key_count` for a multi-key call.
 *
 * @example
 * ```ts
 * import { subscribe } from 'node:diagnostics_channel';
 * import { eventAttributes } from '@pglock/otel';
 * import { lockChannels, type LockEventBase } from '@pglock/core';
 *
 * subscribe(lockChannels.requested, (message) => console.log(eventAttributes(message as LockEventBase)));
 * ```
 */
export function eventAttributes(event: LockEventBase): Attributes {
  const names = event.names.filter((name): name is string => name !== undefined);
  const namespaces = [
    ...new Set(event.keys.flatMap((key) => (key.form === 'bigint' && key.namespace ? [key.namespace] : []))),
  ];
  const attributes: Attributes = {
    'pglock.key': event.keys.map(keyText).join(' '),
    'pglock.scope': event.scope,
    'pglock.mode': event.mode,
  };
  if (names.length > 0) attributes['pglock.name'] = names.join(' ');
  if (namespaces.length > 0) attributes['pglock.namespace'] = namespaces.join(' ');
  if (event.keys.length > 1) attributes['pglock.key_count'] = event.keys.length;
  return attributes;
}

function keyText(key: LockKey): string {
  return key.form === 'bigint' ? String(key.value) : `${key.pair[0]},${key.pair[1]}`;
}
