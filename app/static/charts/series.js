// The series of an xy plot, each drawn through the panel's scales sx and sy (data -> px):
// curves, histogram bars, arrows from the origin, points (circles or stars) with their names,
// and each one's swatch in the legend.

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

function curve(ctx, s, d, sx, sy) {
  // a line through the points, broken where a value is missing; dots on it where asked
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
  if (!s.markers) return;
  for (let i = 0; i < n; i++) {
    if (!Number.isFinite(d.y[i])) continue;
    ctx.beginPath();
    ctx.arc(sx(d.x[i]), sy(d.y[i]), 3.5, 0, 2 * Math.PI);
    ctx.fill();
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
  } else if (s.symbol === "star") star(ctx, x + 12, y, tick / 1.6);
  else ctx.fillRect(x + 6, y - tick / 2 + 1, tick - 2, tick - 2);
}
