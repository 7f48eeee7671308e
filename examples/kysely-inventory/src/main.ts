// One command: `pnpm start` (uses DATABASE_URL, else starts an embedded PostgreSQL).
import { startEmbeddedServer } from '@pglock/test-kit';
import { runInventory } from './inventory.ts';

const server = process.env.DATABASE_URL ? undefined : await startEmbeddedServer();
const url = process.env.DATABASE_URL ?? server!.url;
try {
  const report = await runInventory(url);
  console.log(`4 sellers, ${report.killed} killed with SIGKILL in the middle of a sale.`);
  console.table(report.products);
  console.log(
    report.ok
      ? 'Books balance: every product sold exactly its stock, none oversold; the killed sale rolled back.'
      : 'Books do NOT balance.',
  );
  process.exitCode = report.ok ? 0 : 1;
} finally {
  await server?.stop();
}
