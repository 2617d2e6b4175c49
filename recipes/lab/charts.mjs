// Charts of the lab's pages, as standalone SVG text.

const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const pct = (x) => (100 * x).toFixed(1) + '%';

// Grouped bars: one group per category (distance bin, length), one bar per series.
// hlines: [[y, label]] drawn dashed across (chance levels).
export function groupedBars({ title, groups, series, yLabel = 'accuracy', hlines = [] }) {
  const W = 1100, H = 390, left = 60, right = 250, top = 40, bottom = 60;
  const plotW = W - left - right, plotH = H - top - bottom;
  // Ten distinct colours (a legend of more repeats them; the lab's charts have at most ten series).
  const colors = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
  const groupW = plotW / groups.length, barW = (groupW * 0.8) / series.length;
  let s = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="13">`;
  s += `<rect width="${W}" height="${H}" fill="white"/><text x="${left}" y="24" font-size="15">${esc(title)}</text>`;
  for (let t = 0; t <= 4; ++t) {
    const y = top + plotH - (plotH * t) / 4;
    s += `<line x1="${left}" x2="${left + plotW}" y1="${y}" y2="${y}" stroke="#ddd"/>`;
    s += `<text x="${left - 8}" y="${y + 4}" text-anchor="end">${25 * t}%</text>`;
  }
  s += `<text x="14" y="${top + plotH / 2}" transform="rotate(-90 14 ${top + plotH / 2})" text-anchor="middle">${yLabel}</text>`;
  for (const [y, label] of hlines) {
    const at = top + plotH - plotH * y;
    s += `<line x1="${left}" x2="${left + plotW}" y1="${at}" y2="${at}" stroke="#888" stroke-dasharray="4 3"/>`;
    s += `<text x="${left + plotW + 4}" y="${at + 4}" fill="#666" font-size="11">${esc(label)}</text>`;
  }
  groups.forEach((g, gi) => {
    const x0 = left + gi * groupW + groupW * 0.1;
    series.forEach((se, si) => {
      const v = se.values[gi];
      if (!Number.isFinite(v)) return;
      const h = plotH * v;
      s += `<rect x="${(x0 + si * barW).toFixed(1)}" y="${(top + plotH - h).toFixed(1)}" width="${(barW - 1).toFixed(1)}" ` +
        `height="${h.toFixed(1)}" fill="${colors[si % colors.length]}"><title>${esc(se.name)} ${esc(String(g).replace('\n', ' '))}: ${pct(v)}</title></rect>`;
    });
    // A label's lines (split at '\n') under its group.
    const x = left + (gi + 0.5) * groupW;
    s += `<text x="${x}" y="${top + plotH + 20}" text-anchor="middle" font-size="12">` +
      String(g).split('\n').map((line, i) => `<tspan x="${x}" dy="${i ? 15 : 0}">${esc(line)}</tspan>`).join('') + '</text>';
  });
  series.forEach((se, si) => {
    const y = top + 10 + si * 20;
    s += `<rect x="${W - right + 16}" y="${y - 10}" width="12" height="12" fill="${colors[si % colors.length]}"/>`;
    s += `<text x="${W - right + 34}" y="${y}">${esc(se.name)}</text>`;
  });
  return s + '</svg>\n';
}

