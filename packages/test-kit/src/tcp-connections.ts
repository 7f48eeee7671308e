import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * How many TCP connections process `pid` has open to `port` (the server's), read from Linux's
 * `/proc`: the sockets among its file descriptors, matched against `/proc/net/tcp` and `tcp6` in
 * state ESTABLISHED. Whatever the driver, pool or ORM, this is what the process costs the server in
 * connections. `undefined` where `/proc` cannot say (not Linux, or the process is gone).
 *
 * @example
 * ```ts
 * import { tcpConnectionsOf } from './tcp-connections.ts';
 *
 * console.log(tcpConnectionsOf(process.pid, 5432));
 * ```
 */
export function tcpConnectionsOf(pid: number, port: number): number | undefined {
  let inodes: Set<string>;
  try {
    inodes = new Set(
      readdirSync(`/proc/${pid}/fd`)
        .map((fd) => {
          try {
            return /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
          } catch {
            return undefined;
          }
        })
        .filter((inode): inode is string => inode !== undefined),
    );
  } catch {
    return undefined;
  }
  const remote = port.toString(16).toUpperCase().padStart(4, '0');
  let count = 0;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      const [, , rem, state, , , , , , inode] = fields;
      if (rem === undefined || inode === undefined) continue;
      if (state === '01' && rem.endsWith(`:${remote}`) && inodes.has(inode)) count++;
    }
  }
  return count;
}
