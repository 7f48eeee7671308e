// The timeline picture: one lane per instance, a gold band over the terms it led (labelled with the
// term and who led), thick bars where it held the rebuild lock, thin bars where it held a per-user
// lock (coloured by user), a tick for each digest job run, a red line at the SIGKILL. An HTML page
// with the SVG inline, so it opens in any browser.
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Hold, InstanceState, JobRun, Term } from './instances.ts';
import type { KillRecord } from './verify.ts';

export interface TimelineInput {
  readonly title: string;
  /** Wall-clock ms where the x axis starts (the instances' start). */
  readonly t0: number;
  readonly t1: number;
  readonly instances: readonly InstanceState[];
  readonly holds: readonly Hold[];
  /** The leader terms, with who led them. */
  readonly terms: readonly Term[];
  /** The digest job's runs (one per period across the fleet). */
  readonly runs: readonly JobRun[];
  readonly kill: KillRecord | undefined;
  readonly summary: readonly string[];
}

const LEFT = 120;
const WIDTH = 900;
const LANE = 44;
const TOP = 40;

const escapeHtml = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');

/** Builds the SVG. */
export function timelineSvg(input: TimelineInput): string {
  const { t0, t1, instances, holds, terms, runs, kill } = input;
  const span = Math.max(1, t1 - t0);
  const x = (t: number) => LEFT + (Math.min(Math.max(t, t0), t1) - t0) * (WIDTH / span);
  const laneY = (index: number) => TOP + (index - 1) * LANE;
  const height = TOP + instances.length * LANE + 40;
  const parts: string[] = [];
  instances.forEach((s, i) => {
    const y = laneY(s.index);
    if (i % 2 === 0)
      parts.push(`<rect x="0" y="${y}" width="${LEFT + WIDTH + 20}" height="${LANE}" fill="#f6f7f9"/>`);
    parts.push(`<text x="8" y="${y + 26}" font-size="13">${escapeHtml(s.label)}</text>`);
  });
  const step = span > 40_000 ? 5_000 : span > 12_000 ? 2_000 : 1_000;
  for (let t = 0; t <= span; t += step) {
    const px = x(t0 + t);
    const bottom = TOP + instances.length * LANE;
    parts.push(`<line x1="${px}" y1="${TOP}" x2="${px}" y2="${bottom}" stroke="#ddd"/>`);
    parts.push(`<text x="${px}" y="${bottom + 16}" font-size="11" text-anchor="middle">${t / 1000}s</text>`);
  }
  for (const term of terms) {
    const y = laneY(term.instance);
    const x1 = x(term.from);
    const width = Math.max(1, x(term.to ?? t1) - x1);
    const label = `term ${term.term} · ${term.identity}`;
    parts.push(
      `<rect x="${x1.toFixed(2)}" y="${y + 1}" width="${width.toFixed(2)}" height="4" fill="#f5a524"><title>${escapeHtml(label)}: ${(((term.to ?? t1) - term.from) / 1000).toFixed(2)} s</title></rect>`,
    );
    if (width > 90) {
      parts.push(
        `<text x="${(x1 + 2).toFixed(2)}" y="${y + 15}" font-size="10" fill="#a35d00">${escapeHtml(label)}</text>`,
      );
    }
  }
  for (const run of runs) {
    const px = x(run.at).toFixed(2);
    const y = laneY(run.instance) + LANE - 6;
    parts.push(`<path d="M${px} ${y - 5} l4 5 h-8 z" fill="#222"><title>digest job ran</title></path>`);
  }
  for (const hold of holds) {
    const y = laneY(hold.instance);
    const x1 = x(hold.from);
    const w = Math.max(1, x(hold.to) - x1).toFixed(2);
    const secs = ((hold.to - hold.from) / 1000).toFixed(2);
    if (hold.kind === 'rebuild') {
      const fill = hold.cut ? '#e5484d' : '#3e63dd';
      parts.push(
        `<rect x="${x1.toFixed(2)}" y="${y + 6}" width="${w}" height="16" fill="${fill}"><title>${escapeHtml(hold.name)} ${secs} s${hold.cut ? ' (killed while holding)' : ''}</title></rect>`,
      );
    } else {
      const user = Number(/user:(\d+)/.exec(hold.name)?.[1] ?? 0);
      parts.push(
        `<rect x="${x1.toFixed(2)}" y="${y + 27}" width="${w}" height="8" fill="hsl(${(user * 67) % 360} 55% 55%)"/>`,
      );
    }
  }
  if (kill) {
    const px = x(kill.at).toFixed(2);
    const victim = instances.find((s) => s.label === kill.label);
    if (victim) {
      // The killed instance's lane after the kill: nothing more from it.
      parts.push(
        `<rect x="${px}" y="${laneY(victim.index)}" width="${(x(t1) - x(kill.at)).toFixed(2)}" height="${LANE}" fill="#e5484d" fill-opacity="0.08"/>`,
      );
    }
    parts.push(
      `<line x1="${px}" y1="${TOP - 8}" x2="${px}" y2="${TOP + instances.length * LANE}" stroke="#e5484d" stroke-width="2"/>`,
      `<text x="${px}" y="${TOP - 12}" font-size="12" fill="#e5484d" text-anchor="middle">SIGKILL ${escapeHtml(kill.label)}</text>`,
    );
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${LEFT + WIDTH + 20}" height="${height}" font-family="system-ui, sans-serif" role="img">
<title>${escapeHtml(input.title)}</title>
<rect width="100%" height="100%" fill="white"/>
${parts.join('\n')}
</svg>`;
}

/** Writes the page and returns its path. */
export async function writeTimeline(path: string, input: TimelineInput): Promise<string> {
  const page = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(input.title)}</title>
<style>body{font-family:system-ui,sans-serif;margin:24px;color:#222}pre{background:#f6f7f9;padding:12px}
.key span{display:inline-block;width:24px;height:10px;margin:0 6px 0 16px;vertical-align:middle}</style></head>
<body><h1>${escapeHtml(input.title)}</h1>
<p class="key"><span style="background:#f5a524;height:4px"></span>leader term (term · who led)
<span style="background:#3e63dd"></span>rebuild lock held
<span style="background:#e5484d"></span>rebuild lock held when SIGKILLed (rolled back)
<span style="background:hsl(67 55% 55%);height:6px"></span>per-user lock held (colour = user)
&#9650; digest job ran (once per period across all instances)</p>
${timelineSvg(input)}
<pre>${escapeHtml(input.summary.join('\n'))}</pre>
</body></html>
`;
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, page);
  return path;
}
