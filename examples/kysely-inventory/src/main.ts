// One command: `pnpm start` (uses DATABASE_URL, else starts an embedded PostgreSQL for the run).
import { devDatabase } from './dev-database.ts';
import { runInventory } from './inventory.ts';

const database = await devDatabase();
try {
  const report = await runInventory(database.url);
  console.log(`4 sellers, ${report.killed} killed with SIGKILL in the middle of a sale.`);
  console.table(report.products);
  console.log(
    report.ok
      ? 'Books balance: every product sold exactly its stock, none oversold; the killed sale rolled back.'
      : 'Books do NOT balance.',
  );
  process.exitCode = report.ok ? 0 : 1;
} finally {
  await database.stop();
}
