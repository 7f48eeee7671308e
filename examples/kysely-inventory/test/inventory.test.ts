import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DevDatabase } from '../src/dev-database.ts';
import { runInventory } from '../src/inventory.ts';
import { testDatabase } from './database.ts';

let database: DevDatabase;
beforeAll(async () => {
  database = await testDatabase();
});
afterAll(() => database?.stop());

it('sellers never oversell, and a seller killed mid-sale leaves the books right', async () => {
  const report = await runInventory(database.url, 4, 10);
  expect(report.killed).toMatch(/^seller-[1-4]$/);
  expect(report.products.map((p) => [p.stock, p.sales])).toEqual([
    [0, 10],
    [0, 10],
    [0, 10],
  ]);
  expect(report.ok).toBe(true);
});
