// "xy" charts: plots side by side over numbers (curves, points, histograms, arrows), one
// legend of every named series under the title; hover names the nearest point or the bar under it.

import { GUIDE, fixedTicks, markerLine, niceTicks, tickText, yGridLines } from "./axes.js";
import { PAD, decode, fitText, numText, startChart, upright } from "./canvas.js";
import { END_LABEL_PX, drawSeries, endLabels, swatch } from "./series.js";

export function prepare(spec) {
  // every series of every panel decoded: {x, y, sizes} arrays
  return spec.panels.map((p) =>
    p.series.map((s) => ({ x: decode(s.x).values, y: decode(s.y).values, sizes: s.sizes || null }))
  );
}

function dataBounds(panel, data) {
  // every x and y a panel must show: bars' edges, the origin under bars and arrows, vlines
  const xs = [], ys = [];
  panel.series.forEach((s, j) => {
    const d = data[j];
    for (let i = 0; i < d.x.length; i++) {
      if (!Number.isFinite(d.x[i]) || !Number.isFinite(d.y[i])) continue;
      const half = s.type === "bars" ? (s.bar_width || 0) / 2 : 0;
      xs.push(d.x[i] - half, d.x[i] + half);
      ys.push(d.y[i]);
      if (s.type === "bars" || s.type === "arrows") ys.push(0);
      if (s.type === "arrows") xs.push(0);
    }
  });
  for (const v of panel.vlines || []) xs.push(v.x);
  return { xs, ys };
}

function panelAxes(panel, data) {
  // the panel's x and y axes {lo, hi, t, ticks: [[value, label]]} from given ranges or its
  // data; t maps a value onto the axis (log10 on a log axis)
  const { xs, ys } = dataBounds(panel, data);
  const t = panel.x_log ? (v) => Math.log10(v) : (v) => v;
  let [xlo, xhi] = panel.x_range || [Math.min(...xs), Math.max(...xs)];
  if (!(xhi > xlo)) [xlo, xhi] = [xlo - 1, xlo + 1];
  const xTicks = panel.x_ticks
    ? panel.x_ticks.filter(([v]) => v >= xlo && v <= xhi)
    : fixedTicks(xlo, xhi).ticks.map((v, _, all) => [v, tickText(v, (all[1] - all[0]) || 1)]);
  const x = { lo: t(xlo), hi: t(xhi), t, ticks: xTicks.map(([v, label]) => [t(v), label]) };
  if (panel.y_log) {  // a log y axis: its ticks are given (powers of ten), the data must be > 0
    const ty = (v) => Math.log10(v);
    const [lo, hi] = panel.y_range || [Math.min(...ys), Math.max(...ys)];
    const ticks = (panel.y_ticks || []).filter(([v]) => v >= lo && v <= hi);
    return { x, y: { lo: ty(lo), hi: ty(hi) > ty(lo) ? ty(hi) : ty(lo) + 1, t: ty, ticks } };  // ticks as values: sy maps them
  }
  let y;
  if (panel.y_range) y = fixedTicks(...panel.y_range);
  else {
    const lo = Math.min(...ys), hi = Math.max(...ys);
    y = hi > lo ? niceTicks(lo, hi) : niceTicks(lo - 1, hi + 1);
  }
  const step = y.ticks.length > 1 ? y.ticks[1] - y.ticks[0] : 1;
  return { x, y: { lo: y.lo, hi: y.hi, t: (v) => v, ticks: y.ticks.map((v) => [v, tickText(v, step)]) } };
}

function legendSeries(spec) {
  // every named series, once each (none for a single curve: it needs no key)
  const seen = new Set(), out = [];
  for (const p of spec.panels) {
    for (const s of p.series) {
      if (!s.name || s.legend === false || seen.has(s.name)) continue;
      seen.add(s.name);
      out.push(s);
    }
  }
  return out.length < 2 ? [] : out;
}

function key(ctx, spec, top, tick, width, color) {
  // the legend: one row (wrapping) of swatches under the title; returns where the plots start
  const entries = legendSeries(spec);
  if (!entries.length) return top;
  ctx.font = `${tick}px ${spec.font}`;
  ctx.textBaseline = "middle";
  let x = PAD, y = top + tick / 2 + 2;
  for (const s of entries) {
    const w = ctx.measureText(s.name).width + 30 + 14;
    if (x + w > width - PAD && x > PAD) { x = PAD; y += tick + 8; }
    swatch(ctx, s, x, y, tick, color);
    ctx.fillStyle = color;
    ctx.fillText(s.name, x + 30, y);
    x += w;
  }
  return y + tick / 2 + 10;
}

function panelBox(ctx, spec, panel, axes, x0, w, top, tick) {
  // the plot area of a panel given its column [x0, x0 + w]: room for its tick labels and titles
  const yLabels = Math.max(...axes.y.ticks.map(([, label]) => ctx.measureText(label).width));
  const left = x0 + (panel.y_title ? tick + 8 : 0) + yLabels + 6;
  const bottom = spec.height - PAD - (panel.x_title ? tick + 8 : 0) - tick - 8;
  const names = panel.end_labels ? panel.series.filter((s) => s.type === "line" && s.name) : [];
  let labels = names.length ? Math.max(...names.map((s) => ctx.measureText(s.name).width)) + END_LABEL_PX : 0;
  if (labels > 0.3 * w) labels = 0; // names too long for this column: the legend and markers tell the curves apart
  const box = { x: left, y: top, w: x0 + w - left - 4 - labels, h: 0, endLabels: labels > 0 };
  box.h = bottom - box.y;
  if (panel.equal) {
    // one unit is as long across as up: a circle stays round
    const unit = Math.min(box.w / (axes.x.hi - axes.x.lo), box.h / (axes.y.hi - axes.y.lo));
    const w2 = unit * (axes.x.hi - axes.x.lo), h2 = unit * (axes.y.hi - axes.y.lo);
    box.x += (box.w - w2) / 2;
    box.y += (box.h - h2) / 2;
    box.w = w2;
    box.h = h2;
  }
  return box;
}

function xGridLines(ctx, box, axes, width) {
  // a light line up the box at each x tick, its label under the box where it does not touch the last one
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  let labelEnd = -Infinity; // where the last label drawn ends
  for (const [v, label] of axes.x.ticks) {
    const x = Math.round(box.x + ((v - axes.x.lo) / (axes.x.hi - axes.x.lo)) * box.w) + 0.5;
    ctx.beginPath();
    ctx.moveTo(x, box.y);
    ctx.lineTo(x, box.y + box.h);
    ctx.stroke();
    const half = ctx.measureText(label).width / 2, at = Math.min(x, width - PAD - half); // the last stays whole
    if (at - half < labelEnd + 4) continue;
    ctx.fillText(label, at, box.y + box.h + 5);
    labelEnd = at + half;
  }
}

function frame(ctx, spec, panel, box, axes, sy, x0, tick, em, width, theme) {
  // grid lines, tick labels, the box's border and the panel's axis titles and title
  ctx.fillStyle = theme.text;
  yGridLines(ctx, box, axes.y.ticks.map(([v, label]) => [sy(v), label]), theme);
  xGridLines(ctx, box, axes, width);
  ctx.strokeStyle = theme.frame;
  ctx.strokeRect(box.x + 0.5, box.y + 0.5, box.w - 1, box.h - 1);
  if (panel.x_title) {
    ctx.textBaseline = "bottom";
    ctx.fillText(panel.x_title, box.x + box.w / 2, spec.height - PAD);
  }
  if (panel.y_title) upright(ctx, panel.y_title, x0, box.y + box.h / 2, "center", "top");
  if (panel.title) {
    ctx.textBaseline = "bottom";
    fitText(ctx, panel.title, box.x + box.w / 2, box.y - tick / 2 - 2, box.w + 20, Math.round(14 * em), `%spx ${spec.font}`);
  }
}

function scales(box, axes) {
  // data -> px across (sx) and up (sy) the box
  return {
    sx: (v) => box.x + ((axes.x.t(v) - axes.x.lo) / (axes.x.hi - axes.x.lo)) * box.w,
    sy: (v) => box.y + box.h - ((axes.y.t(v) - axes.y.lo) / (axes.y.hi - axes.y.lo)) * box.h,
  };
}

function plotPanel(ctx, spec, panel, data, box, { sx, sy }, tick, theme) {
  // the panel's series and dashed guides, clipped to (just beyond) its box
  ctx.save();
  ctx.beginPath();
  ctx.rect(box.x - 8, box.y - 40, box.w + 16, box.h + 48);  // markers at the edges stay whole, labels may rise
  ctx.clip();
  panel.series.forEach((s, j) => drawSeries(ctx, s, data[j], sx, sy, spec.font, tick, theme.text));
  for (const v of panel.vlines || []) markerLine(ctx, sx(v.x), box, v.text, GUIDE, spec.font, tick, theme);
  ctx.restore();
  return box.endLabels ? endLabels(ctx, panel.series, data, { sx, sy }, box, spec.font, tick, theme.text) : [];
}

export function paint(ctx, spec, data, width, em, theme) {
  // the whole chart at this width: panels share it by their `width`; returns their boxes and
  // scales, and where the curves' end labels went
  const tick = Math.round((spec.tick_px || 13) * em), titlePx = Math.round(15 * em);
  startChart(ctx, spec, width, titlePx, theme);
  const top = key(ctx, spec, PAD + (spec.title ? titlePx + 8 : 0), tick, width, theme.text);
  const panelTitle = spec.panels.some((p) => p.title) ? Math.round(14 * em) + 8 : 0;
  const gap = 28 * em;
  const shares = spec.panels.map((p) => p.width || 1);
  const total = shares.reduce((a, b) => a + b, 0);
  const free = width - 2 * PAD - gap * (spec.panels.length - 1);
  const boxes = [], labels = [];
  let x0 = PAD;
  spec.panels.forEach((panel, i) => {
    const axes = panelAxes(panel, data[i]);
    const w = (free * shares[i]) / total;
    ctx.font = `${tick}px ${spec.font}`;
    const box = panelBox(ctx, spec, panel, axes, x0, w, top + panelTitle + tick / 2, tick);
    const scale = scales(box, axes);
    frame(ctx, spec, panel, box, axes, scale.sy, x0, tick, em, width, theme);
    labels.push(...plotPanel(ctx, spec, panel, data[i], box, scale, tick, theme));
    boxes.push({ ...box, ...scale });
    x0 += w + gap;
  });
  return { boxes, labels };
}

export function hit(spec, data, drawn, x, y) {
  // the point (or bar) nearest the pointer in the panel under it: {i, j, n}
  for (let i = 0; i < drawn.boxes.length; i++) {
    const b = drawn.boxes[i];
    if (x < b.x || x > b.x + b.w || y < b.y || y > b.y + b.h) continue;
    let best = null, bestD = 30;
    spec.panels[i].series.forEach((s, j) => {
      if (s.hover === false) return;
      const d = data[i][j];
      for (let n = 0; n < d.x.length; n++) {
        if (!Number.isFinite(d.y[n])) continue;
        let dist;
        if (s.type === "bars") {
          const half = (s.bar_width || 0) / 2;
          dist = x >= b.sx(d.x[n] - half) && x <= b.sx(d.x[n] + half) ? 0 : Infinity;
        } else dist = Math.hypot(b.sx(d.x[n]) - x, b.sy(d.y[n]) - y);
        if (dist < bestD) [best, bestD] = [{ i, j, n, x, y }, dist];
      }
    });
    return best;
  }
  return null;
}

function fields(spec, data, h) {
  // a point's [name, text] pairs as tips and tables write them: its label, x (a bar's as
  // centre ± half its width), y
  const p = spec.panels[h.i], s = p.series[h.j], d = data[h.i][h.j], digits = spec.digits ?? 4;
  const xText = s.type === "bars" && s.bar_width ? `${numText(d.x[h.n], digits)} ± ${numText(s.bar_width / 2, digits)}` : numText(d.x[h.n], digits);
  const out = [[p.x_title || "x", xText], [p.y_title || p.title || "y", numText(d.y[h.n], digits)]];
  const names = s.labels || s.hover_labels; // hover_labels: named in tips and tables only
  if (names) out.unshift(["name", names[h.n]]);
  return out;
}

export function tip(spec, data, h) {
  // [series name, its point's name, x, y]
  const p = spec.panels[h.i], s = p.series[h.j];
  const lines = fields(spec, data, h).map(([name, text]) => (name === "name" ? text : `${name} ${text}`));
  return [s.name || p.title || null, ...lines];
}

export function legend(spec) {
  // the names in the legend
  return legendSeries(spec).map((s) => s.name);
}

export function stops(spec, data, drawn) {
  // the keyboard's rows: one per hoverable series of each panel, its points (or bars) in order
  const rows = [];
  drawn.boxes.forEach((b, i) => {
    spec.panels[i].series.forEach((s, j) => {
      if (s.hover === false) return;
      const d = data[i][j], row = [];
      for (let n = 0; n < d.x.length; n++) {
        if (!Number.isFinite(d.y[n]) || !Number.isFinite(d.x[n])) continue;
        const x = b.sx(d.x[n]), y = b.sy(d.y[n]);
        let box = [x - 6, y - 6, 12, 12];
        if (s.type === "bars") {
          const x0 = b.sx(d.x[n] - (s.bar_width || 0) / 2), x1 = b.sx(d.x[n] + (s.bar_width || 0) / 2);
          box = [x0, Math.min(y, b.sy(0)), Math.max(2, x1 - x0), Math.abs(b.sy(0) - y)];
        }
        row.push({ i, j, n, x, y, box });
      }
      if (row.length) rows.push(row);
    });
  });
  return rows;
}

export function table(spec, data) {
  // each hoverable series as a table of its points, written as its tips write them
  const out = [];
  spec.panels.forEach((p, i) =>
    p.series.forEach((s, j) => {
      const d = data[i][j];
      if (s.hover === false || !d.x.length) return;
      const rows = Array.from(d.x, (_, n) => [String(n + 1), ...fields(spec, data, { i, j, n }).map(([, t]) => t)]);
      const columns = ["#", ...fields(spec, data, { i, j, n: 0 }).map(([name]) => name)];
      out.push({ caption: [spec.title, p.title, s.name].filter(Boolean).join(" · ") || spec.file, columns, rows });
    })
  );
  return out;
}

export function about(spec) {
  // what the plots show: each panel's series against its x axis
  return spec.panels
    .map((p) => {
      const names = p.series.filter((s) => s.name).map((s) => s.name);
      const what = names.length ? names.join(", ") : p.y_title || p.title || "values";
      return `${p.title ? p.title + ": " : ""}${what} against ${p.x_title || "x"}.`;
    })
    .join(" ");
}
