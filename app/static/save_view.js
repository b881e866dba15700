// "Download this view (HTML)": the page as shown (its text, tables, widget values and interactive
// charts) in one file that opens offline. The file's shell, with the chart code inlined, comes
// from Python (attention_lab.charts.offline.shell) the first time it is asked for in a tab.

const KEEP = new Set(["H1", "H2", "H3", "H4", "H5", "H6", "P", "UL", "OL", "LI", "STRONG", "EM", "B", "I",
  "CODE", "PRE", "TABLE", "THEAD", "TBODY", "TR", "TH", "TD", "CAPTION", "FIGURE", "FIGCAPTION",
  "BLOCKQUOTE", "BR", "HR", "SUP", "SUB", "KBD", "DIV", "SPAN", "A", "MARK", "DEL"]);
const DROP = new Set(["BUTTON", "SVG", "SCRIPT", "STYLE", "INPUT", "IFRAME", "IMG", "CANVAS", "TEXTAREA", "SELECT"]);
const TEXT = ["stHeading", "stMarkdown", "stCaptionContainer", "stHtml", "stAlert", "stCode", "stMetric"];
const WIDGETS = ["stTextInput", "stTextArea", "stNumberInput", "stSelectbox", "stSlider", "stRadio",
  "stCheckbox", "stMultiSelect", "stSelectSlider"];

function clean(node) {
  // a copy of the page's own HTML: allowed tags only, no attributes but a table cell's spans
  if (node.nodeType === Node.TEXT_NODE) return document.createTextNode(node.textContent);
  if (node.nodeType !== Node.ELEMENT_NODE || DROP.has(node.tagName.toUpperCase())) return null;
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
  const label = el.querySelector('[data-testid="stWidgetLabel"]')?.innerText.trim() || "";
  const input = el.querySelector("input, textarea");
  const slider = el.querySelector('[role="slider"]');
  const picked = el.querySelector('[data-baseweb="select"]');
  let value;
  if (slider) value = [...el.querySelectorAll('[role="slider"]')].map((s) => s.getAttribute("aria-valuetext") || s.getAttribute("aria-valuenow")).join(" – ");
  else if (picked) value = picked.innerText.trim();
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

function gather(main) {
  // the page's elements in order: [html of each block, JSON of each chart's spec]
  const blocks = [], specs = [];
  for (const el of main.querySelectorAll('[data-testid="stElementContainer"]')) {
    const chart = chartIn(el);
    const kind = el.firstElementChild?.dataset?.testid || el.querySelector("[data-testid]")?.dataset.testid;
    if (chart?.__spec) {
      const name = `p${specs.length}`;
      specs.push(`<script type="application/json" data-spec="${name}">` +
        JSON.stringify({ ...chart.__spec, clickable: false }).replace(/</g, "\\u003c") + "</script>");
      blocks.push(`<div class="lab-mount" data-spec="${name}"></div>`);
    } else if (TEXT.includes(kind)) {
      const holder = document.createElement("div");
      holder.appendChild(clean(el));
      blocks.push(holder.innerHTML);
    } else if (WIDGETS.includes(kind)) {
      blocks.push(widgetText(el).outerHTML);
    }
  }
  return [blocks, specs];
}

function save(shell, button) {
  const main = document.querySelector('[data-testid="stMain"]');
  const [blocks, specs] = gather(main);
  const title = document.title.replace(/[<&>]/g, (c) => ({ "<": "&lt;", "&": "&amp;", ">": "&gt;" })[c]);
  const inside = `<section class="lab-scene">${blocks.join("\n")}</section>${specs.join("")}`;
  const file = shell.replace("<!--lab:title-->", () => title).replace("<!--lab:body-->", () => inside);
  const page = location.pathname.split("/").filter(Boolean).pop() || "home";
  const link = Object.assign(document.createElement("a"), {
    href: URL.createObjectURL(new Blob([file], { type: "text/html" })),
    download: `attention-lab-${page}.html`,
  });
  document.body.appendChild(link);
  link.click();
  setTimeout(() => { URL.revokeObjectURL(link.href); link.remove(); }, 1000);
  button.disabled = false;
}

export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  let button = parentElement.querySelector("button.lab-save");
  if (!button) {
    button = document.createElement("button");
    button.className = "lab-save";
    button.type = "button";
    button.textContent = "Download this view (HTML)";
    parentElement.appendChild(button);
  }
  if (data?.shell) window.__labShell = data.shell; // kept for the tab: asked for once
  button.onclick = () => {
    if (window.__labShell) return save(window.__labShell, button);
    button.disabled = true; // until the shell arrives
    window.__labSaveWaiting = true;
    setTriggerValue("want", true);
  };
  if (data?.shell && window.__labSaveWaiting) {
    window.__labSaveWaiting = false;
    save(window.__labShell, button);
  }
}
