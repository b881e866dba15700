// "Download this view (HTML)": the page as shown (its text, tables, widget values and interactive
// charts) in one file that opens offline; "Download this tour (HTML)": every scene of the tour on,
// walked with the tour bar's own buttons, as one file with Previous / Next and the arrow keys; a
// class follower's "Download the views you followed": each view the lecturer showed this tab.
// The file's shell, with the chart code inlined, comes from Python
// (attention_lab.charts.offline.shell) the first time a tab asks for it.

import { keyed, part } from "./streamlit_dom.js";

const KEEP = new Set(["H1", "H2", "H3", "H4", "H5", "H6", "P", "UL", "OL", "LI", "STRONG", "EM", "B", "I",
  "CODE", "PRE", "TABLE", "THEAD", "TBODY", "TR", "TH", "TD", "CAPTION", "FIGURE", "FIGCAPTION",
  "BLOCKQUOTE", "BR", "HR", "SUP", "SUB", "KBD", "DIV", "SPAN", "A", "MARK", "DEL"]);
const DROP = new Set(["BUTTON", "SVG", "SCRIPT", "STYLE", "INPUT", "IFRAME", "IMG", "CANVAS", "TEXTAREA", "SELECT"]);
// Streamlit's elements copied as they are shown, and widgets written as "label: value" (a select
// slider is a slider to Streamlit's page)
const TEXT = ["heading", "markdown", "caption", "html", "alert", "code", "metric"].map(part).join(", ");
const WIDGETS = ["text_input", "text_area", "number_input", "selectbox", "slider", "radio", "checkbox",
  "multiselect"].map(part).join(", ");

function clean(node) {
  // a copy of the page's own HTML: allowed tags only, no attributes but a table cell's spans
  if (node.nodeType === Node.TEXT_NODE) return document.createTextNode(node.textContent);
  if (node.nodeType !== Node.ELEMENT_NODE || DROP.has(node.tagName.toUpperCase())) return null;
  if (node.matches(part("icon"))) return null; // an icon's ligature name ("check_circle")
  const tag = node.tagName.toUpperCase();
  const out = KEEP.has(tag) ? document.createElement(tag === "A" ? "span" : tag) : document.createDocumentFragment();
  for (const name of ["colspan", "rowspan", "scope"]) {
    if (out.setAttribute && node.hasAttribute(name)) out.setAttribute(name, node.getAttribute(name));
  }
  for (const child of node.childNodes) {
    const copy = clean(child);
    if (copy) out.appendChild(copy);
  }
  return out;
}

function widgetText(el) {
  // "label: value" of an input as it is set now
  const label = el.querySelector(part("widget_label"))?.innerText.trim() || "";
  const input = el.querySelector("input, textarea");
  const slider = el.querySelector('[role="slider"]');
  const tags = el.querySelector(part("multiselect_tags"));
  let value;
  if (slider) value = [...el.querySelectorAll('[role="slider"]')].map((s) => s.getAttribute("aria-valuetext") || s.getAttribute("aria-valuenow")).join(" – ");
  else if (tags) value = tags.innerText.split("\n").map((tag) => tag.trim()).filter(Boolean).join(", ");
  else if (input?.type === "checkbox") value = input.checked ? "on" : "off";
  else if (el.querySelector('[role="radiogroup"]')) value = el.querySelector("input:checked")?.closest("label")?.innerText.trim();
  else value = input?.value;
  const p = document.createElement("p");
  p.className = "lab-note";
  p.textContent = `${label}: ${value ?? ""}`;
  return p;
}

function chartIn(el) {
  // our chart in an element: a v2 component draws in its host's shadow root
  for (const node of [el, ...el.querySelectorAll("*")]) {
    const chart = (node.shadowRoot || node).querySelector?.(".lab-chart");
    if (chart) return chart;
  }
  return null;
}

function gather(main, prefix = "p") {
  // the page's elements in order: [html of each block, JSON of each chart's spec]
  const blocks = [], specs = [];
  for (const el of main.querySelectorAll(part("element"))) {
    const chart = chartIn(el);
    const first = el.firstElementChild?.matches(part("any_part")) ? el.firstElementChild : el.querySelector(part("any_part"));
    if (chart?.__spec) {
      const name = `${prefix}${specs.length}`;
      specs.push(`<script type="application/json" data-spec="${name}">` +
        JSON.stringify({ ...chart.__spec, clickable: false }).replace(/</g, "\\u003c") + "</script>");
      blocks.push(`<div class="lab-mount" data-spec="${name}"></div>`);
    } else if (first?.matches(TEXT)) {
      const holder = document.createElement("div");
      holder.appendChild(clean(el));
      blocks.push(holder.innerHTML);
    } else if (first?.matches(WIDGETS)) {
      blocks.push(widgetText(el).outerHTML);
    }
  }
  return [blocks, specs];
}

const escapeHtml = (text) => text.replace(/[<&>]/g, (c) => ({ "<": "&lt;", "&": "&amp;", ">": "&gt;" })[c]);
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

function scene(title, prefix, hidden) {
  // the page as shown now, as one scene of a file: [section html, spec scripts]
  const [blocks, specs] = gather(document.querySelector(part("main")), prefix);
  const heading = title ? `<h2 tabindex="-1">${escapeHtml(title)}</h2>` : "";
  return [`<section class="lab-scene"${hidden ? " hidden" : ""}>${heading}${blocks.join("\n")}</section>`, specs.join("")];
}

function download(shell, title, scenes, nav, file) {
  const inside = (scenes.length > 1 ? nav : "") + scenes.map((s) => s[0]).join("") + scenes.map((s) => s[1]).join("");
  const html = shell.replace("<!--lab:title-->", () => escapeHtml(title)).replace("<!--lab:body-->", () => inside);
  const link = Object.assign(document.createElement("a"), {
    href: URL.createObjectURL(new Blob([html], { type: "text/html" })),
    download: file,
  });
  document.body.appendChild(link);
  link.click();
  setTimeout(() => { URL.revokeObjectURL(link.href); link.remove(); }, 1000);
}

function pageTitle() {
  // the page's own h1 (every page has one), else the tab's title
  return document.querySelector(`${part("main")} h1`)?.innerText.trim() || document.title;
}

function savePage({ shell, nav }) {
  const page = location.pathname.split("/").filter(Boolean).pop() || "home";
  download(shell, `${pageTitle()} · ${document.title}`, [scene("", "p", false)], nav, `attention-lab-${page}.html`);
}

function idle() {
  const status = document.querySelector(part("status"))?.innerText.toLowerCase() || "";
  return !status.includes("running") && !status.includes("stop");
}

async function settled(k) {
  // wait until the page shows tour scene k and its run has finished (then a moment to draw)
  for (let i = 0; i < 300; i++) {
    await sleep(200);
    const bar = document.querySelector(`${keyed("tour_bar")} [role=status]`)?.innerText || "";
    if (bar.includes(`scene ${k} of`) && idle()) {
      await sleep(800);
      if (idle()) return true;
    }
  }
  return false;
}

async function step(key, k) {
  document.querySelector(`${keyed(key)} button`)?.click();
  return settled(k);
}

async function saveTour({ shell, nav, tour }, button) {
  // walk every scene with the tour bar's own buttons, keep each as shown, come back
  const { n, k: start, title } = tour;
  const scenes = [];
  const say = (text) => (button.textContent = text);
  for (let k = start; k > 1; k--) await step("tour_prev", k - 1);
  for (let k = 1; k <= n; k++) {
    say(`Saving scene ${k} of ${n}…`);
    if (k > 1 && !(await step("tour_next", k))) break;
    scenes.push(scene(`Scene ${k} of ${n}: ${pageTitle()}`, `s${k}_`, k > 1));
  }
  for (let k = scenes.length; k > start; k--) await step("tour_prev", k - 1);
  download(shell, title || "Attention Lab tour", scenes, nav, "attention-lab-tour.html");
}

function saveFollowed({ shell, nav }) {
  const seen = window.__labSeen || [];
  const scenes = seen.map((s, i) => [s[0].replace("<section class=\"lab-scene\">", `<section class="lab-scene"${i ? " hidden" : ""}>`), s[1]]);
  download(shell, "Attention Lab class session", scenes, nav, "attention-lab-class.html");
}

let candidate = null; // [url, ticks it has stayed] of the view a follower is shown now

function remember(parent, data, setTriggerValue) {
  // a follower: each new view the lecturer shows (its URL steady and its run finished for 2 s),
  // kept in this tab; runs every second while following, as mirrored views rerun nothing here
  const url = location.href;
  candidate = candidate?.[0] === url && idle() ? [url, candidate[1] + 1] : [url, 0];
  window.__labSeen ||= [];
  const seen = window.__labSeen;
  if (candidate[1] === 2 && !seen.some((s) => s.url === url) && seen.length < 40) {
    const kept = scene(`View ${seen.length + 1}: ${pageTitle()}`, `v${seen.length}_`, false);
    kept.url = url;
    seen.push(kept);
  }
  if (seen.length) {
    const b = button(parent, "lab-save-class", seen.length === 1 ? "Download the view you followed (HTML)" : `Download the ${seen.length} views you followed (HTML)`);
    b.onclick = () => withShell(setTriggerValue, saveFollowed);
  }
}

function button(parent, name, label) {
  let b = parent.querySelector(`button.${name}`);
  if (!b) {
    b = Object.assign(document.createElement("button"), { className: `lab-save ${name}`, type: "button" });
    parent.appendChild(b);
  }
  b.textContent = label;
  b.disabled = false;
  return b;
}

function withShell(setTriggerValue, run) {
  // the shell comes once per tab, in a rerun of the button's fragment asked for here
  if (window.__labShell) return run(window.__labShell);
  window.__labSaveWaiting = run;
  setTriggerValue("want", true);
}

export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  if (data?.shell) window.__labShell = { shell: data.shell, nav: data.nav };
  const page = button(parentElement, "lab-save-page", "Download this view (HTML)");
  page.onclick = () => ((page.disabled = true), withShell(setTriggerValue, (s) => { savePage(s); page.disabled = false; }));
  const tourButton = parentElement.querySelector("button.lab-save-tour");
  if (data?.tour && !window.__labWalking) {
    const b = button(parentElement, "lab-save-tour", "Download this tour (HTML)");
    b.onclick = () => {
      b.disabled = window.__labWalking = true;
      withShell(setTriggerValue, (s) =>
        saveTour({ ...s, tour: data.tour }, b).finally(() => { window.__labWalking = false; b.disabled = false; b.textContent = "Download this tour (HTML)"; }));
    };
  } else if (!data?.tour && tourButton && !window.__labWalking) tourButton.remove();
  clearInterval(window.__labRemembering);
  const tick = () => remember(parentElement, data, setTriggerValue);
  if (data?.following) window.__labRemembering = setInterval(tick, 1000);
  tick();
  if (data?.shell && window.__labSaveWaiting) {
    const run = window.__labSaveWaiting;
    window.__labSaveWaiting = null;
    run(window.__labShell);
  }
}
