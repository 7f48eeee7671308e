/** One bar: its label, value, and the series it belongs to (which picks its colour). */
export interface Bar {
  readonly label: string;
  readonly value: number;
  readonly series?: string;
}

export interface BarChart {
  readonly title: string;
  readonly unit: string;
  readonly bars: readonly Bar[];
  /** Log scale, for values that span orders of magnitude (hand-off latencies). */
  readonly log?: boolean;
}

const COLOURS = ['#2f6fdf', '#e07b28', '#3a9d5d', '#b6443f', '#7a5cc4', '#6b7280'];

function xml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function format(value: number): string {
  if (!Number.isFinite(value)) return 'n/a';
  if (value >= 100) return value.toFixed(0);
  if (value >= 10) return value.toFixed(1);
  return value.toPrecision(2);
}

/**
 * A horizontal bar chart as a standalone SVG document (no dependencies, readable on GitHub).
 *
 * @example
 * ```ts
 * const svg = barChart({ title: 'ops/s', unit: 'ops/s', bars: [{ label: 'pg', value: 1200 }] });
 * ```
 */
export function barChart(chart: BarChart): string {
  const labelWidth = 330;
  const plotWidth = 420;
  const rowHeight = 20;
  const top = 44;
  const series = [...new Set(chart.bars.map((b) => b.series ?? ''))];
  const finite = chart.bars.map((b) => b.value).filter((v) => Number.isFinite(v) && v > 0);
  const max = Math.max(...finite, 1e-9);
  const min = Math.min(...finite, max);
  const floor = chart.log ? 10 ** Math.floor(Math.log10(min)) : 0;
  const scale = (v: number): number => {
    if (!Number.isFinite(v) || v <= 0) return 0;
    if (!chart.log) return (v / max) * plotWidth;
    return (Math.log10(v / floor) / Math.log10((max * 1.05) / floor)) * plotWidth;
  };
  const legendHeight = series.length > 1 ? 20 : 0;
  const height = top + chart.bars.length * rowHeight + legendHeight + 16;
  const width = labelWidth + plotWidth + 80;
  const rows = chart.bars.map((bar, i) => {
    const y = top + i * rowHeight;
    const colour = COLOURS[series.indexOf(bar.series ?? '') % COLOURS.length];
    const w = scale(bar.value);
    return [
      `<text x="${labelWidth - 8}" y="${y + 14}" text-anchor="end">${xml(bar.label)}</text>`,
      `<rect x="${labelWidth}" y="${y + 3}" width="${w.toFixed(1)}" height="${rowHeight - 6}" fill="${colour}"/>`,
      `<text x="${labelWidth + w + 6}" y="${y + 14}">${format(bar.value)}</text>`,
    ].join('');
  });
  const legend =
    series.length > 1
      ? series
          .map((name, i) => {
            const x = labelWidth + i * 110;
            const y = top + chart.bars.length * rowHeight + 8;
            return `<rect x="${x}" y="${y}" width="12" height="12" fill="${COLOURS[i % COLOURS.length]}"/><text x="${x + 16}" y="${y + 11}">${xml(name)}</text>`;
          })
          .join('')
      : '';
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="12" y="22" font-size="15" font-weight="600">${xml(chart.title)}</text>`,
    `<text x="12" y="38" fill="#555">${xml(chart.unit)}${chart.log ? ' (log scale)' : ''}</text>`,
    ...rows,
    legend,
    '</svg>',
    '',
  ].join('\n');
}
