import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { connect } from './database.ts';

const sellerPath = fileURLToPath(new URL('./seller.ts', import.meta.url));

/** What a run found: per product, the stock left and the sales recorded. */
export interface InventoryReport {
  readonly products: readonly { name: string; initial: number; stock: number; sales: number }[];
  readonly killed: string;
  /** True when no product was oversold and every committed sale took exactly one unit. */
  readonly ok: boolean;
}

/**
 * Stocks three products, starts `sellers` processes that sell until all are sold out, kills one of
 * them with SIGKILL in the middle of a sale, and checks the books.
 */
export async function runInventory(url: string, sellers = 4, stock = 15): Promise<InventoryReport> {
  const db = connect(url);
  try {
    await sql`DROP TABLE IF EXISTS sale, product`.execute(db);
    await sql`CREATE TABLE product (id int PRIMARY KEY, name text NOT NULL, stock int NOT NULL)`.execute(db);
    await sql`CREATE TABLE sale (id serial PRIMARY KEY, product_id int NOT NULL REFERENCES product, seller text NOT NULL)`.execute(
      db,
    );
    const names = ['lamp', 'kettle', 'teapot'];
    await db
      .insertInto('product')
      .values(names.map((name, i) => ({ id: i + 1, name, stock })))
      .execute();

    let killed = '';
    const exits = Array.from({ length: sellers }, (_, i) => {
      const name = `seller-${i + 1}`;
      // tsx runs the TypeScript; NODE_OPTIONS (and with it any --conditions) passes on to the seller.
      const child = spawn(process.execPath, ['--import', 'tsx', sellerPath, url, name], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      createInterface({ input: child.stdout }).on('line', (line) => {
        const event = JSON.parse(line) as { event: string };
        // The first seller to reach the middle of a sale (after its insert, before its update) is
        // killed there. Not a seller chosen in advance: on a loaded machine one process can start so
        // late that the others have sold the whole stock before its first sale (seen in CI).
        if (event.event === 'mid-sale' && killed === '') {
          killed = name;
          child.kill('SIGKILL');
        }
      });
      return new Promise<void>((resolve) => child.once('exit', () => resolve()));
    });
    await Promise.all(exits);

    const rows = await db
      .selectFrom('product')
      .leftJoin('sale', 'sale.product_id', 'product.id')
      .select(['product.name', 'product.stock', (eb) => eb.fn.count<string>('sale.id').as('sales')])
      .groupBy(['product.id', 'product.name', 'product.stock'])
      .orderBy('product.id')
      .execute();
    const products = rows.map((r) => ({
      name: r.name,
      initial: stock,
      stock: r.stock,
      sales: Number(r.sales),
    }));
    const ok = products.every((p) => p.stock === 0 && p.sales === p.initial);
    return { products, killed, ok };
  } finally {
    await db.destroy();
  }
}
