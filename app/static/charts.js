// Charts drawn on a canvas in the page (lab/charts.py builds the specs this reads), mounted
// by a Streamlit v2 component: this module mounts one chart and hands it to its kind's module
// under charts/ (native ES modules, each fetched once per browser page).
// Why a canvas: plotly.js costs ~2.7 s of a 2-core box's main thread before its first chart;
// this draws a 4 x 4 grid in a few milliseconds. Hover names every cell, bar or point, a click
// on a grid's head sends {layer, head} back to Python, the PNG button saves the chart with its title.

import * as bars from "./charts/bars.js";
import * as heatmap from "./charts/heatmap.js";
import { followPointer, savePng } from "./charts/pointer.js";
import * as xy from "./charts/xy.js";

// spec.kind -> its module: prepare(spec) -> data; paint(ctx, spec, data, width, em, color) -> drawn;
// hit(spec, data, drawn, x, y) -> what is there; tip(spec, data, hit) -> lines; legend(spec) -> names
const KINDS = { grid: heatmap, head: heatmap, bars, xy };

function chartRoot(parentElement) {
  // the chart's element, kept across reruns: its canvas, hover tip and PNG button
  let root = parentElement.querySelector("div.lab-chart");
  if (root) return root;
  root = document.createElement("div");
  root.className = "lab-chart";
  root.innerHTML =
    '<canvas></canvas><div class="tip" hidden></div>' +
    '<button class="save" title="Download this chart as a PNG">PNG</button>';
  parentElement.appendChild(root);
  return root;
}

function sizedContext(canvas, width, height) {
  // the canvas at width x height CSS px, backed by device pixels; its context in CSS px
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(height * dpr);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  return ctx;
}

function describe(root, canvas, spec, drawn, legend) {
  // where things are, for tests and probes: [layer, head, x, y, w, h] per panel; and what the
  // picture says, for screen readers and tests: the title and the legend's entries
  root.dataset.cells = JSON.stringify(
    drawn.boxes.map((b, i) => [
      spec.panels?.[i]?.layer ?? null,
      spec.panels?.[i]?.head ?? null,
      ...[b.x, b.y, b.w, b.h].map(Math.round),
    ])
  );
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-label", spec.title || spec.file);
  root.dataset.legend = JSON.stringify(legend);
  root.dataset.drawn = String(Date.now());
}

function redrawOnResize(root, render) {
  // render again when the chart's column changes width (one observer per chart element,
  // replaced on each rerun); returns what stops it
  if (root.__observer) root.__observer.disconnect();
  let lastWidth = root.clientWidth;
  root.__observer = new ResizeObserver(() => {
    if (root.clientWidth !== lastWidth) {
      lastWidth = root.clientWidth;
      render();
    }
  });
  root.__observer.observe(root);
  return () => root.__observer.disconnect();
}

export default function (component) {
  // mount one chart: draw it for its column's width, follow the pointer over it, and redraw on resize
  const { data: spec, parentElement, setTriggerValue } = component;
  const host = parentElement.host || parentElement;
  const root = chartRoot(parentElement);
  const canvas = root.querySelector("canvas"), tip = root.querySelector(".tip");
  const kind = KINDS[spec.kind], data = kind.prepare(spec);
  const paint = (ctx, width, em, color) => kind.paint(ctx, spec, data, width, em, color);
  let drawn = { boxes: [] };

  const render = () => {
    const style = getComputedStyle(host);
    const em = parseFloat(getComputedStyle(document.documentElement).fontSize) / 16 || 1;
    spec.font = style.fontFamily || "sans-serif";
    const width = Math.max(80, root.clientWidth || 160); // never wider than its column: a wider canvas is cut off
    const color = style.color || "#31333f";
    drawn = paint(sizedContext(canvas, width, spec.height), width, em, color);
    root.__render = { width, em, color };
    describe(root, canvas, spec, drawn, kind.legend(spec));
  };

  const hitAt = (x, y) => kind.hit(spec, data, drawn, x, y), tipOf = (h) => kind.tip(spec, data, h);
  followPointer(canvas, tip, spec, hitAt, tipOf, (p) => setTriggerValue("head", { layer: p.layer, head: p.head }));
  root.querySelector(".save").onclick = () => savePng(spec, paint, root.__render);

  const stop = redrawOnResize(root, render);
  render();
  return stop;
}
