import { expect, inject, it } from 'vitest';
import { runInventory } from '../src/inventory.ts';

it('sellers never oversell, and a seller killed mid-sale leaves the books right', async () => {
  const report = await runInventory(inject('databaseUrl'), 4, 10);
  expect(report.killed).toBe('seller-1');
  expect(report.products.map((p) => [p.stock, p.sales])).toEqual([
    [0, 10],
    [0, 10],
    [0, 10],
  ]);
  expect(report.ok).toBe(true);
});
