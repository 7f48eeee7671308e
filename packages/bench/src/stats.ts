/**
 * The median of `values` (NaN for none).
 *
 * @example
 * ```ts
 * median([3, 1, 2]); // 2
 * ```
 */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * The `p`th percentile of `values` (nearest rank; NaN for none).
 *
 * @example
 * ```ts
 * percentile([1, 2, 3, 4], 99); // 4
 * ```
 */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Least, median and greatest of a sample. */
export interface Spread {
  readonly min: number;
  readonly median: number;
  readonly max: number;
}

/**
 * The {@link Spread} of `values`.
 *
 * @example
 * ```ts
 * spread([0.9, 1.1, 1.0]); // { min: 0.9, median: 1, max: 1.1 }
 * ```
 */
export function spread(values: readonly number[]): Spread {
  return { min: Math.min(...values), median: median(values), max: Math.max(...values) };
}
