// JSON between the scenario processes and main.ts. JSON has no NaN or ±Infinity (a ratio of a
// missing figure, the largest wait of no waits), which the report prints as "n/a": they travel as
// `{ "nonFinite": "NaN" }` and come back as numbers.

/**
 * `value` as JSON, non-finite numbers kept.
 *
 * @example
 * ```ts
 * fromJson(toJson({ ratio: Number.NaN })); // { ratio: NaN }
 * ```
 */
export function toJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    typeof v === 'number' && !Number.isFinite(v) ? { nonFinite: String(v) } : v,
  );
}

/** Reads what {@link toJson} wrote. */
export function fromJson<T>(text: string): T {
  return JSON.parse(text, (_key, v: unknown) =>
    typeof v === 'object' && v !== null && 'nonFinite' in v && Object.keys(v).length === 1
      ? Number((v as { nonFinite: string }).nonFinite)
      : v,
  ) as T;
}
