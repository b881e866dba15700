// A tour scene's key charts brought into view (app/lecture/tours.py sends this inline, its keys
// the widget keys of its charts or tables): once the page's run is over, scroll Streamlit's main
// element by the least that shows every one of them below the tour bar. It runs when its element
// is new, which is when a scene opens, not on each rerun of the scene. It is inlined, so each read
// of Streamlit's elements (app/static/streamlit_dom.js) is put in as a selector by streamlit_dom.inline,
// which defines the table's `keyed` before it.
(() => {
  const keys = __KEYS__, started = Date.now();
  const status = () => document.querySelector(part("status"))?.innerText || "";
  const selector = (k) => `${keyed(k)}, .lab-table[data-key="${CSS.escape(k)}"]`;
  const find = () => keys.map((k) => document.querySelector(selector(k)));
  const scroller = (el) => {
    for (let p = el.parentElement; p; p = p.parentElement) {
      const o = getComputedStyle(p).overflowY;
      if ((o === "auto" || o === "scroll") && p.scrollHeight > p.clientHeight) return p;
    }
    return document.scrollingElement;
  };
  const bottomOf = (css) => document.querySelector(css)?.getBoundingClientRect().bottom || 0;
  const reveal = (again) => {
    const found = find();
    if (/running|stop/i.test(status()) || found.some((e) => !e || !e.getBoundingClientRect().height)) {
      if (Date.now() - started < 30000) setTimeout(() => reveal(again), 250);
      return;
    }
    const boxes = found.map((e) => e.getBoundingClientRect());
    const top = Math.min(...boxes.map((b) => b.top));
    const bottom = Math.max(...boxes.map((b) => b.bottom));
    const above = Math.max(bottomOf(keyed("tour_bar")), bottomOf(part("header"))) + 8;
    const below = window.innerHeight - 8;
    const delta = bottom > below ? Math.min(bottom - below, top - above) : top < above ? top - above : 0;
    if (delta) scroller(found[0]).scrollBy({ top: delta });
    if (again) setTimeout(() => reveal(false), 800); // once more, after a late change of layout
  };
  reveal(true);
})();
