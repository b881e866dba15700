// Shared axis drawing: round tick values and their text, light grid lines, and the dashed
// vertical markers; every dash pattern of the charts lives here, in one place.

// a curve's dash by name, on the plot and on its 24 px legend swatch (shorter, so it shows)
const DASHES = {
  dash: { plot: [8, 5], swatch: [6, 3] },
  dot: { plot: [2, 4], swatch: [2, 3] },
  dashdot: { plot: [8, 4, 2, 4], swatch: [6, 3, 2, 3] },
};
export const MARKER_DASH = [6, 4];  // vertical marker lines
export const OUTLINE_DASH = [5, 3];  // outlines of marked cells (padding)

export function dashOf(name, where) {
  // the pattern of dash style `name` ("dash", "dot", "dashdot"; else solid) "plot" or "swatch"
  return DASHES[name]?.[where] ?? [];
}

export function labelStep(given, slot, need) {
  // every how many'th label to write: the given step, more where labels `need` px each and
  // their slots are `slot` px apart (a narrow chart), so that no two touch
  return Math.max(given || 1, Math.ceil(need / Math.max(slot, 1e-6)));
}

export function niceTicks(lo, hi) {
  // about five round values spanning [lo, hi], and the span they cover
  const raw = (hi - lo || 1) / 5;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const first = Math.floor(lo / step) * step, last = Math.ceil(hi / step) * step;
  const ticks = [];
  const k0 = Math.round(first / step);  // ticks are whole multiples of step: 0 is 0, never -2.78e-17
  for (let k = k0; k * step <= last + step / 2; k++) ticks.push(+(k * step).toPrecision(6) || 0);
  return { ticks, lo: first, hi: last };
}

export function fixedTicks(lo, hi) {
  // a given axis range [lo, hi] with round ticks inside it
  return { ticks: niceTicks(lo, hi).ticks.filter((v) => v >= lo - 1e-12 && v <= hi + 1e-12), lo, hi };
}

export function tickText(v, step) {
  // a tick value as short text: 1e-4 steps in e-notation, others with the step's decimals
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a < 1e-3 || a >= 1e6) return v.toExponential(Math.max(0, Math.min(2, -Math.floor(Math.log10(step)) + Math.floor(Math.log10(a)))));
  let d = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  while (d < 6 && Math.abs(step * 10 ** d - Math.round(step * 10 ** d)) > 1e-6) d++;  // 0.025 needs 3
  return String(+v.toFixed(d));
}

export function yGridLines(ctx, box, ticks, theme) {
  // a light line across `box` at each [y in px, label], the label left of the box
  ctx.strokeStyle = theme.grid;
  ctx.lineWidth = 1;
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (const [at, label] of ticks) {
    const y = Math.round(at) + 0.5;
    ctx.beginPath();
    ctx.moveTo(box.x, y);
    ctx.lineTo(box.x + box.w, y);
    ctx.stroke();
    ctx.fillText(label, box.x - 6, y);
  }
}

// the two looks of a marker line: a map's x_marker (in the text's colour, its bold text on a
// patch of the background over the cells) and an xy panel's vlines (a grey guide, plain text)
export const MARKER = { stroke: null, width: 2.5, bold: true, patch: true, gap: 6, drop: 6 };
export const GUIDE = { stroke: "#6b7280", width: 2, bold: false, patch: false, gap: 5, drop: 4 };

export function markerLine(ctx, x, box, text, look, font, tick, theme) {
  // a dashed vertical line at x across `box`, `text` at its top: right of it, or left where there is no room
  if (look.patch) {
    // over a map: a solid band in the page's colour under the dashes, so they show on light and dark cells
    ctx.strokeStyle = theme.patch;
    ctx.lineWidth = look.width + 2;
    ctx.beginPath();
    ctx.moveTo(x, box.y);
    ctx.lineTo(x, box.y + box.h);
    ctx.stroke();
  }
  ctx.strokeStyle = look.stroke ?? theme.text;
  ctx.lineWidth = look.width;
  ctx.setLineDash(MARKER_DASH);
  ctx.beginPath();
  ctx.moveTo(x, box.y);
  ctx.lineTo(x, box.y + box.h);
  ctx.stroke();
  ctx.setLineDash([]);
  if (!text) return;
  ctx.font = `${look.bold ? "600 " : ""}${tick}px ${font}`;
  ctx.textBaseline = "top";
  const wide = ctx.measureText(text).width;
  const left = x + 6 + wide > box.x + box.w;
  ctx.textAlign = left ? "right" : "left";
  if (look.patch) {
    ctx.fillStyle = theme.patch;
    ctx.fillRect(left ? x - look.gap - 2 - wide : x + look.gap - 2, box.y + look.drop - 2, wide + 4, tick + 4);
  }
  ctx.fillStyle = theme.text;
  ctx.fillText(text, left ? x - look.gap : x + look.gap, box.y + look.drop);
}
