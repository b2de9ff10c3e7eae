// weir dashboard: the SVG line chart of the detail page's progress series
// (no chart library), and its legend. Adds weir.lineChart, weir.legend.
'use strict';
(() => {
  const { esc, fmtNum, fmtClock } = window.weir;

  // ---- charts -------------------------------------------------------------

  const COLORS = ['#0969da', '#d1580b'];

  // A small line chart: `series` is [{name, points: [[x, y|null], ...]}],
  // x in ms. Nulls break a line. data-points on the <svg> is the number of
  // points with a value in the longest series, for tests to read.
  function lineChart(svg, series, empty) {
    const W = Math.max(200, Math.round(svg.getBoundingClientRect().width) || 480);
    const H = 150;
    const L = 52, R = 10, T = 10, B = 18;
    const xs = [];
    const ys = [];
    let count = 0;
    for (const s of series) {
      let c = 0;
      for (const [x, y] of s.points) {
        if (y == null || !Number.isFinite(y)) continue;
        xs.push(x); ys.push(y); c++;
      }
      count = Math.max(count, c);
    }
    svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
    svg.setAttribute('data-points', String(count));
    if (!count) {
      svg.innerHTML = `<text x="${W / 2}" y="${H / 2}" text-anchor="middle">${esc(empty || 'no data yet')}</text>`;
      return;
    }
    const x0 = Math.min(...xs);
    const x1 = Math.max(...xs);
    const y0 = Math.min(0, ...ys);
    let y1 = Math.max(...ys);
    if (y1 <= y0) y1 = y0 + 1;
    const sx = (x) => (x1 === x0 ? (L + W - R) / 2 : L + ((x - x0) / (x1 - x0)) * (W - L - R));
    const sy = (y) => H - B - ((y - y0) / (y1 - y0)) * (H - T - B);
    const f = (v) => v.toFixed(1);
    let out = `<line class="grid" x1="${L}" x2="${W - R}" y1="${T}" y2="${T}"/>`
      + `<line class="grid" x1="${L}" x2="${W - R}" y1="${f((T + H - B) / 2)}" y2="${f((T + H - B) / 2)}"/>`
      + `<line class="axis" x1="${L}" x2="${L}" y1="${T}" y2="${H - B}"/>`
      + `<line class="axis" x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}"/>`
      + `<text x="${L - 4}" y="${T + 4}" text-anchor="end">${esc(fmtNum(y1))}</text>`
      + `<text x="${L - 4}" y="${H - B}" text-anchor="end">${esc(fmtNum(y0))}</text>`
      + `<text x="${L}" y="${H - 4}">${esc(fmtClock(x0))}</text>`
      + `<text x="${W - R}" y="${H - 4}" text-anchor="end">${esc(fmtClock(x1))}</text>`;
    series.forEach((s, i) => {
      const color = COLORS[i % COLORS.length];
      let seg = [];
      let lastPt = null;
      // A lone point (a run between nulls) gets a dot, else it is invisible.
      const flush = () => {
        if (seg.length > 1) out += `<polyline stroke="${color}" points="${seg.join(' ')}"/>`;
        else if (seg.length === 1) { const [cx, cy] = seg[0].split(','); out += `<circle cx="${cx}" cy="${cy}" r="2" fill="${color}"/>`; }
        seg = [];
      };
      for (const [x, y] of s.points) {
        if (y == null || !Number.isFinite(y)) { flush(); continue; }
        seg.push(`${f(sx(x))},${f(sy(y))}`);
        lastPt = [sx(x), sy(y)];
      }
      flush();
      if (lastPt) out += `<circle cx="${f(lastPt[0])}" cy="${f(lastPt[1])}" r="2.5" fill="${color}"><title>${esc(s.name)}</title></circle>`;
    });
    svg.innerHTML = out;
  }

  const legend = (names) => names.map((n, i) => `<span class="muted"><i class="key c${i}"></i>${esc(n)}</span>`).join(' ');

  Object.assign(window.weir, { lineChart, legend });
})();
