// Charts drawn on a canvas in the page (lab/charts.py builds the specs this reads), mounted
// by a Streamlit v2 component: this module mounts one chart and hands it to its kind's module
// under charts/ (native ES modules, each fetched once per browser page).
// Why a canvas: plotly.js costs ~2.7 s of a 2-core box's main thread before its first chart;
// this draws a 4 x 4 grid in a few milliseconds. Hover names every cell, bar or point, a click
// on a grid's head sends {layer, head} back to Python, the PNG button saves the chart with its title.

import * as bars from "./charts/bars.js";
import { withAlpha } from "./charts/colors.js";
import * as heatmap from "./charts/heatmap.js";
import { fillTable, followKeys, followPointer, savePng, saveSvg } from "./charts/pointer.js";
import * as xy from "./charts/xy.js";
import { keyed, part } from "./streamlit_dom.js";

// spec.kind -> its module: prepare(spec) -> data; paint(ctx, spec, data, width, em, theme) -> drawn;
// hit(spec, data, drawn, x, y) -> what is there; tip(spec, data, hit) -> lines; legend(spec) -> names;
// stops(spec, data, drawn) -> rows of hits the keyboard visits; table(spec, data) -> the numbers as
// tables; about(spec) -> a sentence saying what the chart shows, where Python gave none
const KINDS = { grid: heatmap, head: heatmap, bars, xy };

function chartRoot(parentElement) {
  // the chart's element, kept across reruns: its canvas (focusable), the keyboard's cursor, the
  // hover tip, a live region reading what the cursor is on, the buttons and the table view
  let root = parentElement.querySelector("div.lab-chart");
  if (root) return root;
  root = document.createElement("div");
  root.className = "lab-chart";
  const id = `lab-chart-${Math.random().toString(36).slice(2, 10)}`;
  root.innerHTML =
    `<canvas tabindex="0" aria-describedby="${id}-about"></canvas><div class="cursor" hidden></div>` +
    `<div class="tip" hidden></div><p class="sr-only" id="${id}-about"></p>` +
    '<div class="live sr-only" aria-live="polite"></div>' +
    '<div class="tools"><button class="table-button" aria-expanded="false">Show as table</button>' +
    '<button class="save">PNG</button><button class="save-svg">SVG</button></div>' +
    '<div class="data-table" hidden></div>';
  parentElement.appendChild(root);
  return root;
}

function readTheme(host) {
  // the active Streamlit theme, which a v2 component gets as --st-* CSS properties: text and
  // background, and from them the grid lines, frames and the patch under a marker's text
  const style = getComputedStyle(host), prop = (name) => style.getPropertyValue(name).trim();
  const text = prop("--st-text-color") || style.color || "#31333f";
  const background = prop("--st-background-color") || "#ffffff";
  return { text, background, grid: withAlpha(text, 0.14), frame: withAlpha(text, 0.5), patch: withAlpha(background, 0.85) };
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

function describe(root, canvas, spec, kind, drawn) {
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
  canvas.setAttribute("aria-label", spec.title || spec.file.replace(/_/g, " "));
  root.querySelector(".sr-only[id]").textContent =
    `${spec.description || kind.about(spec)} Arrow keys move through the chart and read each value; ` +
    '"Show as table" lists every number.';
  root.dataset.legend = JSON.stringify(kind.legend(spec));
  // a head map: how many of its rows and of its columns carry a label, of how many (the rest are
  // thinned out to fit), {rows: [labelled, all], columns: [labelled, all]}
  if (drawn.labelled) root.dataset.labelled = JSON.stringify(drawn.labelled);
  root.__spec = spec; // what was drawn, for probes: the table view and tests read the same numbers
  root.__drawn = drawn;
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

// A click on a grid's head draws that head large in the chart keyed spec.follow, which on a phone
// lies under the grid, out of view: it is brought into view now, and again once the rerun redrew it.
let pending = null; // { key, until }: the chart to bring into view when it is drawn next

function intoView(key) {
  const el = document.querySelector(keyed(key));
  if (!el) return;
  const box = el.getBoundingClientRect();
  const top = document.querySelector(part("header"))?.getBoundingClientRect().bottom || 0;
  el.style.scrollMarginTop = `${top}px`; // not under Streamlit's header
  if (box.top < top || box.bottom > window.innerHeight) el.scrollIntoView({ block: "nearest" });
}

function follow(key) {
  pending = { key, until: Date.now() + 15000 };
  intoView(key);
}

function followed(host) {
  // a chart just drawn: the one a click asked for is brought into view (once)
  if (!pending || Date.now() > pending.until) return;
  if (host.closest?.(keyed(pending.key))) {
    const { key } = pending;
    pending = null;
    requestAnimationFrame(() => intoView(key));
  }
}

export default function (component) {
  // mount one chart: draw it for its column's width in the page's theme, follow the pointer and
  // the keyboard over it, and redraw on resize
  const { data: sent, parentElement, setTriggerValue } = component;
  // a page sends the spec as JSON bytes (Streamlit then neither scans nor re-encodes it); the
  // notebook widget and the offline files hand over the object
  const spec = sent instanceof Uint8Array ? JSON.parse(new TextDecoder().decode(sent)) : sent;
  const host = parentElement.host || parentElement;
  const root = chartRoot(parentElement);
  const canvas = root.querySelector("canvas"), tip = root.querySelector(".tip");
  const kind = KINDS[spec.kind], data = kind.prepare(spec);
  const paint = (ctx, width, em, theme) => kind.paint(ctx, spec, data, width, em, theme);
  let drawn = { boxes: [] }, keepCursor = () => null;

  const render = () => {
    const style = getComputedStyle(host);
    const em = parseFloat(getComputedStyle(document.documentElement).fontSize) / 16 || 1;
    spec.font = style.fontFamily || "sans-serif";
    const width = Math.max(80, root.clientWidth || 160); // never wider than its column: a wider canvas is cut off
    const theme = readTheme(host);
    drawn = paint(sizedContext(canvas, width, spec.height), width, em, theme);
    root.__render = { width, em, theme };
    describe(root, canvas, spec, kind, drawn);
    keepCursor();
  };

  const hitAt = (x, y) => kind.hit(spec, data, drawn, x, y), tipOf = (h) => kind.tip(spec, data, h);
  const openHead = (p, h) => {
    if (spec.clickable === "cell") return setTriggerValue("cell", { query: h.q, key: h.k });
    setTriggerValue("head", { layer: p.layer, head: p.head });
    if (spec.follow) follow(spec.follow);
  };
  followPointer(canvas, tip, spec, hitAt, tipOf, openHead);
  keepCursor = followKeys(root, spec, () => kind.stops(spec, data, drawn), tipOf, openHead);
  root.querySelector(".save").onclick = () => savePng(spec, paint, root.__render);
  root.querySelector(".save-svg").onclick = () => saveSvg(spec, paint, root.__render);
  const tableButton = root.querySelector(".table-button"), holder = root.querySelector(".data-table");
  tableButton.onclick = () => {
    const open = holder.hidden;
    if (open) fillTable(holder, kind.table(spec, data));
    holder.hidden = !open;
    tableButton.setAttribute("aria-expanded", String(open));
    tableButton.textContent = open ? "Hide table" : "Show as table";
  };
  if (!holder.hidden) fillTable(holder, kind.table(spec, data)); // a rerun's new numbers in an open table

  const stop = redrawOnResize(root, render);
  const scheme = window.matchMedia("(prefers-color-scheme: dark)");
  scheme.addEventListener("change", render); // the page's theme follows the system's: so does the chart
  render();
  followed(host);
  return () => {
    stop();
    scheme.removeEventListener("change", render);
  };
}
