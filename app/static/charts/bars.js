// Grouped bars over labels (tokens, vocabulary entries, vector dimensions): one series per
// colour, each bar's value written above it where asked, hover names every series' value.

import { fixedTicks, labelStep, niceTicks, yGridLines } from "./axes.js";
import { PAD, boxAt, decode, startChart, upright } from "./canvas.js";

function colorOf(spec, j, text) {
  // series j's colour from the spec's cycle; "text" is the theme's text colour
  const c = spec.colors[j % spec.colors.length];
  return c === "text" ? text : c;
}

export function prepare(spec) {
  // every series' (n,) values decoded
  return spec.series.map((s) => decode(s.z));
}

function layout(ctx, spec, series, width, em) {
  // the plot's box and its y scale (the given range, else round values around 0 and the data)
  const tick = Math.round(spec.tick_px * em), titlePx = Math.round(15 * em);
  const all = series.flatMap((s) => Array.from(s.values).filter(Number.isFinite));
  const scale = spec.y_range ? fixedTicks(...spec.y_range) : niceTicks(Math.min(0, ...all), Math.max(0, ...all));
  ctx.font = `${tick}px ${spec.font}`;
  const shown = spec.x.filter((_, k) => k % spec.x_every === 0);
  const widest = Math.max(0, ...shown.map((t) => ctx.measureText(t).width));
  const yLabels = Math.max(...scale.ticks.map((v) => ctx.measureText(String(v)).width));
  const text = spec.series.some((s) => s.text) ? (spec.text_angle ? 0 : tick + 4) : 0;  // room for values
  const top = PAD + (spec.title ? titlePx + 8 : 0) + (spec.legend ? tick + 16 : 0) + tick / 2 + text;
  const left = PAD + tick + 8 + yLabels + 6;
  const bottom = PAD + (spec.x_title ? tick + 8 : 0) + (spec.x_angle ? widest + 8 : tick + 8);
  const plot = { x: left, y: top, w: width - left - PAD, h: spec.height - top - bottom };
  const yOf = (v) => plot.y + plot.h - ((v - scale.lo) / (scale.hi - scale.lo || 1)) * plot.h;
  const slot = plot.w / Math.max(spec.x.length, 1), bar = (slot * 0.8) / series.length;
  return { plot, scale, tick, titlePx, yOf, slot, bar };
}

function fillBars(ctx, spec, series, L, text) {
  // series j's bar k in the j-th place of slot k, from 0 to its value
  const { plot, yOf, slot, bar } = L;
  series.forEach((s, j) => {
    ctx.fillStyle = colorOf(spec, j, text);
    for (let k = 0; k < spec.x.length; k++) {
      const x = plot.x + k * slot + slot * 0.1 + j * bar, y0 = yOf(0), y1 = yOf(s.values[k]);
      ctx.fillRect(x, Math.min(y0, y1), Math.max(1, bar - (series.length > 1 ? 1 : 0)), Math.abs(y1 - y0));
    }
  });
}

function barValues(ctx, spec, series, L, color) {
  // each bar's value written above it (turned in narrow columns)
  const { plot, yOf, slot, bar, tick } = L;
  ctx.fillStyle = color;
  ctx.font = `${tick}px ${spec.font}`;
  spec.series.forEach((s, j) => {
    if (!s.text) return;
    for (let k = 0; k < spec.x.length; k++) {
      const x = plot.x + k * slot + slot * 0.1 + (j + 0.5) * bar, y = Math.min(yOf(0), yOf(series[j].values[k])) - 4;
      if (spec.text_angle) upright(ctx, s.text[k], x, y, "left", "middle");
      else {
        ctx.textAlign = "center";
        ctx.textBaseline = "bottom";
        ctx.fillText(s.text[k], x, y);
      }
    }
  });
}

function xAxis(ctx, spec, L, theme) {
  // the zero line, every x_every-th label under its slot (turned where asked), both axis titles
  const { plot, yOf, slot } = L;
  ctx.strokeStyle = theme.frame;
  ctx.beginPath();
  ctx.moveTo(plot.x, Math.round(yOf(0)) + 0.5);
  ctx.lineTo(plot.x + plot.w, Math.round(yOf(0)) + 0.5);
  ctx.stroke();
  ctx.fillStyle = theme.text;
  const shown = spec.x.filter((_, k) => k % spec.x_every === 0);
  const need = spec.x_angle ? L.tick + 2 : Math.max(0, ...shown.map((t) => ctx.measureText(t).width)) + 6;
  const step = labelStep(spec.x_every, slot, need); // labels that would touch are thinned out
  spec.x.forEach((t, k) => {
    if (k % step) return;
    const x = plot.x + (k + 0.5) * slot, y = plot.y + plot.h + 6;
    if (spec.x_angle) {
      upright(ctx, t, x, y, "right");
    } else {
      ctx.textAlign = "center";
      ctx.textBaseline = "top";
      ctx.fillText(t, x, y);
    }
  });
  ctx.textAlign = "center";
  ctx.textBaseline = "bottom";
  if (spec.x_title) ctx.fillText(spec.x_title, plot.x + plot.w / 2, spec.height - PAD);
  upright(ctx, spec.y_title, PAD, plot.y + plot.h / 2, "center", "top");
}

function key(ctx, spec, L, width, color) {
  // the series' names and colours in one row, right-aligned above the plot; smaller where
  // the row would not fit the chart (a narrow column), never cut off at its left
  const { plot, tick } = L;
  const names = spec.series.map((s) => s.name);
  let px = tick;
  const rowWidth = () => names.reduce((w, n) => w + px + 2 + ctx.measureText(n).width, 0) + 14 * (names.length - 1);
  ctx.font = `${px}px ${spec.font}`;
  while (rowWidth() > width - 2 * PAD && px > Math.min(9, tick)) ctx.font = `${--px}px ${spec.font}`;
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  let x = Math.max(PAD, width - PAD - rowWidth());
  const y = plot.y - tick - 10;
  names.forEach((name, j) => {
    ctx.fillStyle = colorOf(spec, j, color);
    ctx.fillRect(x, y - px / 2 + 1, px - 2, px - 2);
    ctx.fillStyle = color;
    ctx.fillText(name, x + px + 2, y);
    x += px + 2 + ctx.measureText(name).width + 14;
  });
}

export function paint(ctx, spec, series, width, em, theme) {
  // the whole chart at this width in the theme's colours; returns the plot's box and one label's slot width
  const L = layout(ctx, spec, series, width, em);
  startChart(ctx, spec, width, L.titlePx, theme);
  ctx.font = `${L.tick}px ${spec.font}`;
  yGridLines(ctx, L.plot, L.scale.ticks.map((v) => [L.yOf(v), String(v)]), theme);
  fillBars(ctx, spec, series, L, theme.text);
  barValues(ctx, spec, series, L, theme.text);
  xAxis(ctx, spec, L, theme);
  if (spec.legend) key(ctx, spec, L, width, theme.text);
  return { boxes: [L.plot], slot: L.slot };
}

export function hit(spec, series, drawn, x, y) {
  // the label k whose slot is under the pointer
  const i = boxAt(drawn.boxes, x, y);
  if (i < 0) return null;
  return { i, q: 0, k: Math.min(spec.x.length - 1, Math.floor((x - drawn.boxes[i].x) / drawn.slot)), x, y };
}

export function tip(spec, series, h) {
  // the label, then every series' value at it
  const lines = spec.series.map((s, j) => `${s.name}: ${series[j].values[h.k].toFixed(spec.digits)}`);
  return [`${spec.x_title ? spec.x_title + " " : ""}${spec.x[h.k]}`, ...lines];
}

export function legend(spec) {
  // the series' names, where there is more than one
  return spec.legend ? spec.series.map((s) => s.name) : [];
}

export function stops(spec, series, drawn) {
  // the keyboard's one row: a stop per label's slot
  const b = drawn.boxes[0];
  if (!b) return [];
  return [spec.x.map((_, k) => {
    const x = b.x + k * drawn.slot;
    return { i: 0, q: 0, k, x: x + drawn.slot / 2, y: b.y + b.h / 2, box: [x, b.y, drawn.slot, b.h] };
  })];
}

export function table(spec, series) {
  // a row per label, a column per series, the values as the tips write them
  const rows = spec.x.map((label, k) => [label, ...series.map((s) => s.values[k].toFixed(spec.digits))]);
  return [{ caption: spec.title || spec.file, columns: [spec.x_title || "label", ...spec.series.map((s) => s.name)], rows }];
}

export function about(spec) {
  // what the bars show: each series for every label
  const names = spec.series.map((s) => s.name).join(", ");
  return `Bars of ${names || spec.y_title || "values"} for each of ${spec.x.length} ${spec.x_title || "labels"}.`;
}
