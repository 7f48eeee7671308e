// One seller process: sells random products until every product is sold out. Each sale reads the
// stock, "takes payment" (a pause), and writes stock - 1: without the lock two sellers would read
// the same stock and oversell.
import { advisoryLocks } from '@pglock/kysely';
import { connect } from './database.ts';

const [url, seller] = process.argv.slice(2);
if (!url || !seller) throw new Error('usage: seller <url> <name>');
const db = connect(url);
const locks = advisoryLocks(db, { namespace: 'kysely-inventory' });
const say = (event: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(event)}\n`);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let sold = 0;
for (;;) {
  const open = await db.selectFrom('product').select('id').where('stock', '>', 0).execute();
  if (open.length === 0) break;
  const { id } = open[Math.floor(Math.random() * open.length)]!;
  await locks.withLock(`product:${id}`, async (trx) => {
    const { stock } = await trx
      .selectFrom('product')
      .select('stock')
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    if (stock === 0) return;
    await trx.insertInto('sale').values({ product_id: id, seller }).execute();
    say({ event: 'mid-sale', seller, product: id });
    await pause(5 + Math.random() * 10);
    await trx
      .updateTable('product')
      .set({ stock: stock - 1 })
      .where('id', '=', id)
      .execute();
    sold++;
  });
}
say({ event: 'done', seller, sold });
await db.destroy();
