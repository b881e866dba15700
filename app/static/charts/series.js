// The series of an xy plot, each drawn through the panel's scales sx and sy (data -> px):
// curves (with marker shapes on them), histogram bars, arrows from the origin, points (circles
// or stars) with their names, each one's swatch in the legend and a curve's name at its end.

import { dashOf } from "./axes.js";

function star(ctx, x, y, r) {
  // a filled five-pointed star of radius r centred at (x, y)
  ctx.beginPath();
  for (let i = 0; i < 10; i++) {
    const a = -Math.PI / 2 + (i * Math.PI) / 5, rr = i % 2 ? r * 0.45 : r;
    ctx.lineTo(x + rr * Math.cos(a), y + rr * Math.sin(a));
  }
  ctx.closePath();
  ctx.fill();
}

export function shape(ctx, name, x, y, r) {
  // a filled marker of radius r centred at (x, y): "circle", "square", "triangle", "diamond",
  // "triangle-down", "plus", "cross" or "star" (curves told apart by shape, not only colour)
  if (name === "star") return star(ctx, x, y, r * 1.3);
  const w = Math.max(1.5, r * 0.55);
  const polygons = {
    square: [[-0.85, -0.85], [0.85, -0.85], [0.85, 0.85], [-0.85, 0.85]],
    triangle: [[0, -1.15], [1.05, 0.8], [-1.05, 0.8]],
    "triangle-down": [[0, 1.15], [1.05, -0.8], [-1.05, -0.8]],
    diamond: [[0, -1.2], [1.1, 0], [0, 1.2], [-1.1, 0]],
  };
  ctx.beginPath();
  if (polygons[name]) polygons[name].forEach(([a, b]) => ctx.lineTo(x + a * r, y + b * r));
  else if (name === "plus" || name === "cross") {
    ctx.save();
    ctx.translate(x, y);
    if (name === "cross") ctx.rotate(Math.PI / 4);
    ctx.rect(-r * 1.15, -w / 2, r * 2.3, w);
    ctx.rect(-w / 2, -r * 1.15, w, r * 2.3);
    ctx.restore();
  } else ctx.arc(x, y, r, 0, 2 * Math.PI);
  ctx.closePath();
  ctx.fill();
}

function curve(ctx, s, d, sx, sy) {
  // a line through the points, broken where a value is missing; its marker shape on every
  // point (up to 40), else on 20 spread along it
  const n = d.x.length;
  ctx.beginPath();
  let open = false;
  for (let i = 0; i < n; i++) {
    if (!Number.isFinite(d.y[i]) || !Number.isFinite(d.x[i])) { open = false; continue; }
    const x = sx(d.x[i]), y = sy(d.y[i]);
    if (open) ctx.lineTo(x, y); else ctx.moveTo(x, y);
    open = true;
  }
  ctx.stroke();
  ctx.setLineDash([]);
  if (!s.marker) return;
  const every = n <= 40 ? 1 : n / 20;
  for (let k = 0; k < n; k += every) {
    const i = Math.min(n - 1, Math.round(k));
    if (Number.isFinite(d.y[i]) && Number.isFinite(d.x[i])) shape(ctx, s.marker, sx(d.x[i]), sy(d.y[i]), 3.5);
  }
}

function histogramBars(ctx, s, d, sx, sy) {
  // a bar bar_width wide centred at each x, from 0 to its y (a 1 px gap between wide bars)
  const half = (s.bar_width || 0) / 2;
  for (let i = 0; i < d.x.length; i++) {
    if (!Number.isFinite(d.y[i])) continue;
    const x0 = sx(d.x[i] - half), x1 = sx(d.x[i] + half), y0 = sy(0), y1 = sy(d.y[i]);
    ctx.fillRect(x0, Math.min(y0, y1), Math.max(1, x1 - x0 - (x1 - x0 > 4 ? 1 : 0)), Math.abs(y1 - y0));
  }
}

function arrowsFromOrigin(ctx, d, sx, sy) {
  // a line from (0, 0) to each point, with a head at the point
  for (let i = 0; i < d.x.length; i++) {
    const x0 = sx(0), y0 = sy(0), x1 = sx(d.x[i]), y1 = sy(d.y[i]);
    const a = Math.atan2(y1 - y0, x1 - x0);
    ctx.beginPath();
    ctx.moveTo(x0, y0);
    ctx.lineTo(x1, y1);
    ctx.stroke();
    ctx.beginPath();
    ctx.moveTo(x1, y1);
    ctx.lineTo(x1 - 10 * Math.cos(a - 0.4), y1 - 10 * Math.sin(a - 0.4));
    ctx.lineTo(x1 - 10 * Math.cos(a + 0.4), y1 - 10 * Math.sin(a + 0.4));
    ctx.closePath();
    ctx.fill();
  }
}

function markers(ctx, s, d, sx, sy) {
  // a circle (or star) of its size at each point
  ctx.globalAlpha = s.opacity ?? 1;
  for (let i = 0; i < d.x.length; i++) {
    if (!Number.isFinite(d.y[i])) continue;
    const r = (d.sizes ? d.sizes[i] : 10) / 2;
    if (s.symbol === "star") star(ctx, sx(d.x[i]), sy(d.y[i]), r);
    else {
      ctx.beginPath();
      ctx.arc(sx(d.x[i]), sy(d.y[i]), r, 0, 2 * Math.PI);
      ctx.fill();
    }
  }
  ctx.globalAlpha = 1;
}

function pointNames(ctx, s, d, sx, sy, font, tick, color) {
  // each point named beside it (above, or right of a star)
  ctx.fillStyle = color;
  ctx.font = `${tick}px ${font}`;
  const right = s.symbol === "star";
  ctx.textAlign = right ? "left" : "center";
  ctx.textBaseline = right ? "middle" : "bottom";
  for (let i = 0; i < d.x.length; i++) {
    const r = (d.sizes ? d.sizes[i] : 10) / 2;
    ctx.fillText(s.labels[i], sx(d.x[i]) + (right ? r + 4 : 0), sy(d.y[i]) - (right ? 0 : r + 3));
  }
}

export function inkOf(s, text) {
  // a series' colour: its own, or the theme's text colour where it says "text"
  return s.color === "text" ? text : s.color;
}

export function drawSeries(ctx, s, d, sx, sy, font, tick, color) {
  // series s (its spec) with its decoded data d = {x, y, sizes}; color: the theme's text
  ctx.strokeStyle = ctx.fillStyle = inkOf(s, color);
  ctx.setLineDash(dashOf(s.dash, "plot"));
  ctx.lineWidth = 2.5;
  if (s.type === "line") curve(ctx, s, d, sx, sy);
  else if (s.type === "bars") histogramBars(ctx, s, d, sx, sy);
  else if (s.type === "arrows") arrowsFromOrigin(ctx, d, sx, sy);
  else markers(ctx, s, d, sx, sy);
  ctx.setLineDash([]);
  if (s.labels) pointNames(ctx, s, d, sx, sy, font, tick, color);
}

export function swatch(ctx, s, x, y, tick, color) {
  // series s's mark in the legend, left end at x, centred on y: a 24 px line, a star or a square
  ctx.strokeStyle = ctx.fillStyle = inkOf(s, color);
  if (s.type === "line") {
    ctx.lineWidth = 3;
    ctx.setLineDash(dashOf(s.dash, "swatch"));
    ctx.beginPath();
    ctx.moveTo(x, y);
    ctx.lineTo(x + 24, y);
    ctx.stroke();
    ctx.setLineDash([]);
    if (s.marker) shape(ctx, s.marker, x + 12, y, 4);
  } else if (s.symbol === "star") star(ctx, x + 12, y, tick / 1.6);
  else ctx.fillRect(x + 6, y - tick / 2 + 1, tick - 2, tick - 2);
}

export const END_LABEL_PX = 23; // what an end label needs beside its name: gap, marker, gap

export function endLabels(ctx, series, data, { sx, sy }, box, font, tick, color) {
  // each curve's marker and name right of the plot box, level with its last point, moved
  // apart just enough not to overlap, with a thin line back to the point; returns [{name, y}]
  const ends = [];
  series.forEach((s, j) => {
    const d = data[j];
    let n = d.x.length - 1;
    while (n >= 0 && !(Number.isFinite(d.y[n]) && Number.isFinite(d.x[n]))) n--;
    if (s.type === "line" && s.name && n >= 0) ends.push({ s, px: sx(d.x[n]), py: sy(d.y[n]), y: sy(d.y[n]) });
  });
  ends.sort((a, b) => a.py - b.py);
  const gap = tick + 3, top = box.y, bottom = box.y + box.h, x = box.x + box.w;
  for (let i = 0; i < ends.length; i++) ends[i].y = Math.max(top + gap / 2, i ? ends[i - 1].y + gap : -Infinity, ends[i].y);
  for (let i = ends.length - 1; i >= 0; i--) ends[i].y = Math.min(ends[i].y, bottom - gap / 2, i < ends.length - 1 ? ends[i + 1].y - gap : Infinity);
  ctx.font = `${tick}px ${font}`;
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  for (const e of ends) {
    ctx.strokeStyle = ctx.fillStyle = inkOf(e.s, color);
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(e.px + 4, e.py);
    ctx.lineTo(x + 2, e.y);
    ctx.stroke();
    shape(ctx, e.s.marker || "circle", x + 9, e.y, 4);
    ctx.fillStyle = color;
    ctx.fillText(e.s.name, x + 17, e.y);
  }
  return ends.map((e) => ({ name: e.s.name, y: e.y }));
}
