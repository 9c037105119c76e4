// Spend per day and per tier as a server-rendered SVG: stacked bars, tier colours from the
// stylesheet (so light and dark both work), a text summary for screen readers, and the same
// numbers as a table for anyone who prefers one.
import { html, type Html } from './html.js';
import { formatMoney } from './format.js';

export const TIER_ORDER = ['free', 'lite', 'standard', 'pro', 'max'] as const;

export interface DaySpend {
  day: string;
  tiers: Map<string, number>;
}

function tierClass(tier: string): string {
  return (TIER_ORDER as readonly string[]).includes(tier) ? `tier-${tier}` : 'tier-other';
}

/** The smallest "nice" ceiling (1, 2, 2.5, 5 × 10^k micros) at or above the value. */
export function niceCeiling(micros: number): number {
  if (micros <= 0) return 1_000_000;
  const magnitude = 10 ** Math.floor(Math.log10(micros));
  for (const step of [1, 2, 2.5, 5, 10]) {
    const candidate = Math.round(step * magnitude);
    if (candidate >= micros) return candidate;
  }
  return 10 * magnitude;
}

export function tiersPresent(days: readonly DaySpend[]): string[] {
  const seen = new Set<string>();
  for (const day of days) for (const [tier, micros] of day.tiers) if (micros > 0) seen.add(tier);
  const known = TIER_ORDER.filter((tier) => seen.has(tier));
  const others = [...seen]
    .filter((tier) => !(TIER_ORDER as readonly string[]).includes(tier))
    .sort();
  return [...known, ...others];
}

export function spendChart(days: readonly DaySpend[], currency: string, id = 'spend'): Html {
  const tiers = tiersPresent(days);
  const totals = days.map((day) =>
    [...day.tiers.values()].reduce((sum, micros) => sum + micros, 0),
  );
  const total_micros = totals.reduce((sum, micros) => sum + micros, 0);
  const first = days[0]?.day ?? '';
  const last = days.at(-1)?.day ?? '';
  const summary =
    total_micros === 0
      ? `No AI spend from ${first} to ${last}.`
      : `AI spend from ${first} to ${last}: ${formatMoney(total_micros, currency)} in all; ` +
        tiers
          .map(
            (tier) =>
              `${tier} ${formatMoney(
                days.reduce((sum, day) => sum + (day.tiers.get(tier) ?? 0), 0),
                currency,
              )}`,
          )
          .join(', ') +
        '.';

  const width = 720;
  const height = 240;
  const left = 78;
  const right = 10;
  const top = 12;
  const bottom = 28;
  const plot_w = width - left - right;
  const plot_h = height - top - bottom;
  const ceiling = niceCeiling(Math.max(...totals, 0));
  const slot = plot_w / Math.max(days.length, 1);
  const bar_w = Math.max(2, Math.min(28, slot * 0.7));
  const y = (micros: number) => top + plot_h - (micros / ceiling) * plot_h;

  const gridlines = [0, 0.25, 0.5, 0.75, 1].map((fraction) => {
    const value = Math.round(ceiling * fraction);
    const at = y(value).toFixed(1);
    return html`<line class="${fraction === 0 ? 'axis' : 'gridline'}" x1="${left}" x2="${width - right}" y1="${at}" y2="${at}"/><text x="${left - 6}" y="${(Number(at) + 4).toFixed(1)}" text-anchor="end">${formatMoney(value, currency)}</text>`;
  });
  const label_every = Math.max(1, Math.ceil(days.length / 8));
  const bars = days.map((day, index) => {
    const x = left + index * slot + (slot - bar_w) / 2;
    let base = 0;
    const segments = tiers.map((tier) => {
      const micros = day.tiers.get(tier) ?? 0;
      if (micros <= 0) return html``;
      const y_top = y(base + micros);
      const h = y(base) - y_top;
      base += micros;
      return html`<rect class="${tierClass(tier)}" x="${x.toFixed(1)}" y="${y_top.toFixed(1)}" width="${bar_w.toFixed(1)}" height="${Math.max(h, 0.5).toFixed(1)}"><title>${day.day}, ${tier}: ${formatMoney(micros, currency)}</title></rect>`;
    });
    const label =
      (days.length - 1 - index) % label_every === 0
        ? html`<text x="${(x + bar_w / 2).toFixed(1)}" y="${height - 8}" text-anchor="middle">${day.day.slice(5)}</text>`
        : html``;
    return html`${segments}${label}`;
  });

  return html`<figure class="chart" aria-labelledby="${id}-caption">
  <svg viewBox="0 0 ${width} ${height}" role="img" aria-labelledby="${id}-title ${id}-desc">
    <title id="${id}-title">Spend per day and tier</title>
    <desc id="${id}-desc">${summary}</desc>
    ${gridlines}${bars}
  </svg>
  <figcaption id="${id}-caption" class="small muted">${summary}</figcaption>
  ${tiers.length ? html`<ul class="legend" aria-hidden="true">${tiers.map((tier) => html`<li><span class="swatch ${tierClass(tier)}"></span>${tier}</li>`)}</ul>` : ''}
  ${total_micros === 0 ? '' : spendTable(days, totals, tiers, currency)}
</figure>`;
}

/** The chart's numbers, for screen readers and for reading off exact amounts. */
function spendTable(
  days: readonly DaySpend[],
  totals: readonly number[],
  tiers: readonly string[],
  currency: string,
): Html {
  return html`<details>
    <summary>Show the numbers as a table</summary>
    <div class="table-wrap"><table>
      <caption class="visually-hidden">Spend per day and tier</caption>
      <thead><tr><th scope="col">Day (UTC)</th>${tiers.map((tier) => html`<th scope="col" class="num">${tier}</th>`)}<th scope="col" class="num">Total</th></tr></thead>
      <tbody>${days
        .map((day, index) => ({ day, total: totals[index]! }))
        .filter(({ total }) => total > 0)
        .reverse()
        .map(
          ({ day, total }) =>
            html`<tr><th scope="row">${day.day}</th>${tiers.map((tier) => html`<td class="num">${formatMoney(day.tiers.get(tier) ?? 0, currency)}</td>`)}<td class="num">${formatMoney(total, currency)}</td></tr>`,
        )}</tbody>
    </table></div>
  </details>`;
}
