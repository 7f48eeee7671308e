// One process of the campaigns scenario (campaigns.ts): `count` leader campaigns over one pg.Pool,
// named `<prefix>:<i>`, reporting each election as a JSON line on stdout. Runs until killed.
import { advisoryLocks } from '@pglock/pg';
import pg from 'pg';

const [url, prefix, countText, identity] = process.argv.slice(2);
if (!url || !prefix || !countText || !identity) {
  throw new Error('usage: campaigns-worker <url> <prefix> <count> <identity>');
}
const pool = new pg.Pool({ connectionString: url });
pool.on('error', () => undefined);
const locks = advisoryLocks(pool);
const say = (event: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(event)}\n`);
};
for (let i = 0; i < Number(countText); i++) {
  locks.leader(`${prefix}:${i}`, {
    identity,
    onElected: ({ term }) => say({ event: 'elected', i, term, at: Date.now() }),
    onError: (error) => say({ event: 'error', error: String(error) }),
  });
}
say({ event: 'campaigning', at: Date.now() });
await new Promise(() => undefined);
