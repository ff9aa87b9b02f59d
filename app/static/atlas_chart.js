// Attention Atlas's chart element, in the browser (app/fast/chart.py is its Python half).
//
// Streamlit's own chart element draws every changed figure from scratch: it keys the chart by the figure, so a
// new figure is a new element and Plotly builds it anew (newPlot), and it draws every chart of a page when the
// page opens, the ones far below the screen too. This element keeps one Plotly plot per chart for as long as
// the chart is on the page and gives it each new figure with Plotly.react, which changes only what changed; and
// it draws a chart only when it comes near the screen (IntersectionObserver), so opening a page or switching the
// language draws the charts the learner can see, and each other chart as it is scrolled to. What is drawn is the
// same figure, in the same theme as Streamlit's (app/static/plotly_theme.json, tools/capture_plotly_theme.py).
//
// window.atlasCharts.drawAll() draws every chart of the page now (printing calls it, and so do the browser
// tests before they read or photograph a page).

const NEAR = "400px 0px";  // a chart is drawn when it comes this close to the screen
// A chart that answers clicks (spec.clicks) shows a hand over its points, not Plotly's crosshair: while Plotly says
// the pointer is over one (its plotly_hover and plotly_unhover events), the chart's box has the class
// atlas-chart-pointing, whose hand every element inside takes (Plotly's own cursors are on its inner elements).
// A chart wider than its column (scrollCue) shows that it scrolls: its scroll bar always, and its right edge faded
// while there is more to the right.
const FADE = "linear-gradient(to right, #000 calc(100% - 56px), rgba(0, 0, 0, 0.3))";
document.head.appendChild(Object.assign(document.createElement("style"),
  {textContent: ".atlas-chart-pointing, .atlas-chart-pointing * {cursor: pointer !important}\n" +
                ".atlas-chart-wide {overflow-x: scroll !important; scrollbar-width: auto; scrollbar-color: #8a8a8a #e8e8e8}\n" +
                `.atlas-chart-wide:not(.atlas-chart-at-end) {mask-image: ${FADE}; -webkit-mask-image: ${FADE}}`}));
const charts = new Map();  // the element's parent node -> its chart record
let plotlyLoad = null;
let themeLoad = null;

function here(name) {
  return new URL(name, import.meta.url).href;
}

// Our own copy of Plotly, always: Streamlit's chart code (loaded for the ViT page's canvas, or by the warm-up)
// may also put a Plotly of its own on window; the charts must not draw with whichever came first.
let plotlyLib = null;
function loadPlotly(file) {
  if (!plotlyLoad) {
    plotlyLoad = new Promise((resolve, reject) => {
      const before = window.Plotly;
      const s = document.createElement("script");
      s.src = here(file);
      s.async = true;
      s.onload = () => {
        const lib = window.Plotly;
        if (before !== undefined) window.Plotly = before;  // leave the page's global as it was
        if (!lib || lib === before) reject(new Error("Plotly did not load"));
        else resolve((plotlyLib = lib));
      };
      s.onerror = () => { plotlyLoad = null; reject(new Error("could not load " + file)); };
      document.head.appendChild(s);
    });
  }
  return plotlyLoad;
}

function loadTheme(file) {
  if (!themeLoad) {
    themeLoad = fetch(here(file)).then((r) => {
      if (!r.ok) throw new Error("could not load " + file);
      return r.json();
    });
    themeLoad.catch(() => { themeLoad = null; });
  }
  return themeLoad;
}

// Whether the page has a dark theme: the theme's background colour, as Streamlit gives it to a component's element
// (the CSS custom property --st-background-color, inherited by `el`, the element's parentElement), else the page's
// own background (document.body: the off-screen warm-up has no element). Read once per task: a rerun hands every
// chart of the page its figure in one go, and each reading of a computed style makes the browser bring the page's
// styles up to date first.
let darkNow = null;
let colourReader = null;  // a canvas context: any CSS colour in, "#rrggbb" or "rgba(...)" out
function rgb(colour) {
  if (!colour) return null;
  colourReader = colourReader || document.createElement("canvas").getContext("2d");
  colourReader.fillStyle = "#010203";
  colourReader.fillStyle = colour;  // a value that is no colour leaves the marker
  const c = colourReader.fillStyle;
  if (c === "#010203" && colour.trim().toLowerCase() !== "#010203") return null;
  if (c[0] === "#") return [1, 3, 5].map((i) => parseInt(c.slice(i, i + 2), 16));
  const m = c.match(/\d+(\.\d+)?/g);
  return m && m.length >= 3 ? m.slice(0, 3).map(Number) : null;
}
function isDark(el) {
  if (darkNow !== null) return darkNow;
  const themeColour = el ? getComputedStyle(el).getPropertyValue("--st-background-color").trim() : "";
  const [r, g, b] = rgb(themeColour) || rgb(getComputedStyle(document.body).backgroundColor) || [255, 255, 255];
  darkNow = 0.2126 * r + 0.7152 * g + 0.0722 * b < 128;
  setTimeout(() => { darkNow = null; }, 0);
  return darkNow;
}

function decode(data) {
  if (data instanceof Uint8Array || data instanceof ArrayBuffer) return JSON.parse(new TextDecoder().decode(data));
  if (typeof data === "string") return JSON.parse(data);
  return data;
}

// ------------------------------------------------------------------------- charts that follow a choice
// A chart with spec.follow shows one variant of its traces and layout per value of the browser choices it follows
// (app/fast/choice.py, app/static/atlas_choice.js): the variant for the choices' values now, drawn with
// Plotly.react, which changes only what changed; a move of the slider draws it again, with no server run.

let choiceLib = null;  // app/static/atlas_choice.js: the choices' values and the variant they pick
function choices(spec) {
  choiceLib ||= import(here(spec.follow.module));
  return choiceLib;
}

// A labelled map (spec.map: app/fast/chart.py says which) is drawn by app/static/atlas_map.js on a canvas of its own,
// one pass over its cells instead of Plotly's pass over the whole figure; Plotly is not even loaded for it.
let mapLib = null;
function maps(spec) {
  mapLib ||= import(here(spec.map));
  return mapLib;
}
function mapOptions(rec) {
  const spec = rec.spec;
  return {words: {download: spec.download, fullscreen: spec.fullscreen, closeFullscreen: spec.closeFullscreen},
          full: !!rec.full, onFullscreen: () => setFullscreen(rec, !rec.full),
          scale: ((spec.config || {}).toImageButtonOptions || {}).scale || 2};
}
function drawMapOf(rec) {
  rec.mapper.drawMap(rec.div, themed(rec.spec, rec.theme, rec.parent), rec.full ? window.innerHeight : rec.spec.height,
                     mapOptions(rec));
}

function unpacked(t) {
  if (t.list) return (i) => t.list[i];
  if (!t.numbers) {
    const raw = atob(t.packed.f4), bytes = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
    t.numbers = new Float32Array(bytes.buffer);
  }
  const [, ...shape] = t.packed.shape, size = shape.reduce((a, b) => a * b, 1);
  // float32 sent, shown to 7 significant digits (as sent), not as float32's binary tail
  const num = (x) => (Number.isFinite(x) ? Number(x.toPrecision(7)) : x);
  return (i) => {
    const flat = Array.from(t.numbers.subarray(i * size, (i + 1) * size), num);
    if (shape.length < 2) return flat;
    const rows = [];
    for (let r = 0; r < shape[0]; r++) rows.push(flat.slice(r * shape[1], (r + 1) * shape[1]));
    return rows;
  };
}

// Set `path` ("title.text", "shapes[0].x0") in `obj`, copying each object on the way (the spec's figure stays).
function setPath(obj, path, value) {
  const keys = path.replace(/\[(\d+)\]/g, ".$1").split(".");
  const top = Array.isArray(obj) ? obj.slice() : Object.assign({}, obj);
  let node = top;
  keys.forEach((k, n) => {
    if (n === keys.length - 1) { node[k] = value; return; }
    const next = node[k];
    node[k] = Array.isArray(next) ? next.slice() : Object.assign({}, typeof next === "object" && next ? next : {});
    node = node[k];
  });
  return top;
}

// The spec's figure with variant i of its follower applied.
function variantFigure(figure, follow, i) {
  const data = (figure.data || []).slice();
  for (const t of follow.traces) {
    t.at ||= unpacked(t);
    data[t.trace] = setPath(data[t.trace], t.attr, t.at(i));
  }
  let layout = figure.layout || {};
  for (const [path, value] of Object.entries((follow.layouts && follow.layouts[i]) || {})) layout = setPath(layout, path, value);
  return {data, layout};
}

// A drawn chart changes only what its variants change (Plotly.update: the traces' attributes and the layout's paths),
// which spares Plotly.react's pass over the whole figure; one not drawn yet, or drawing, is drawn whole.
async function showVariant(rec) {
  const spec = rec.spec, lib = await choiceLib, i = lib.variantOf(spec.follow);
  if (rec.spec !== spec || rec.pending || rec.drawing || i === rec.variant) return;
  rec.variant = i;
  spec.shown = variantFigure(spec.figure, spec.follow, i);
  if (rec.mapper) {
    drawMapOf(rec);
    rec.div.dataset.variant = String(i);
    return;
  }
  const traces = [...new Set(spec.follow.traces.map((t) => t.trace))], data = {};
  for (const t of spec.follow.traces) {
    t.at ||= unpacked(t);
    (data[t.attr] ||= traces.map(() => undefined))[traces.indexOf(t.trace)] = t.at(i);  // undefined: left as it is
  }
  const layout = Object.assign({}, (spec.follow.layouts && spec.follow.layouts[i]) || {});
  if (typeof layout["title.text"] === "string" && layout["title.text"]) layout["title.text"] = "<b>" + layout["title.text"] + "</b>";
  await plotlyLib.update(rec.div, data, layout, traces);
  rec.div.dataset.variant = String(i);  // drawn (benches wait for it)
}

// Where a chart is: on the screen, near it, or in no box at all (a closed tab or expander).
function placeOf(rec) {
  const r = rec.div.getBoundingClientRect();
  if (r.width === 0 && r.height === 0) return "hidden";
  return r.bottom > 0 && r.top < window.innerHeight && r.width > 0 ? "screen" : "near";
}

// The charts on the screen change in the task of the move, so the next frame shows them; those only near the screen
// follow one per frame after it (six maps at once kept the first frame waiting for all six).
const later = [];
function drainLater() {
  const rec = later.shift();
  if (!rec) return;
  if (charts.get(rec.parent) === rec) showVariant(rec);
  if (later.length) requestAnimationFrame(() => setTimeout(drainLater, 0));
}

window.addEventListener("atlas-choice", (e) => {
  const first = [], rest = [];
  for (const rec of charts.values()) {
    const follow = rec.spec && rec.spec.follow;
    if (!follow || !follow.channels.some((c) => c.name === e.detail.channel)) continue;
    const place = rec.visible || rec.all ? placeOf(rec) : "far";
    if (place === "far" || place === "hidden") {
      // drawn again for the choice's value when it comes near the screen, or when its tab opens (the observer
      // sees it come into a box); drawAll draws it at once
      if (!rec.pending) rec.pending = rec.spec;
    } else if (rec.drawnVersion === rec.spec.version && !rec.pending && !rec.drawing && choiceLib && (plotlyLib || rec.mapper)) {
      (place === "screen" ? first : rest).push(rec);
    } else {
      if (!rec.pending) rec.pending = rec.spec;  // the same figure, drawn again for the choice's value
      draw(rec);
    }
  }
  first.forEach(showVariant);
  const waiting = later.length;
  for (const rec of rest) if (!later.includes(rec)) later.push(rec);
  if (!waiting && later.length) requestAnimationFrame(() => setTimeout(drainLater, 0));
});

// The figure as Streamlit's chart element shows it: the theme's template where the figure has Streamlit's
// default one, and the title in bold.
function themed(spec, theme, el) {
  const fig = spec.shown || spec.figure;
  const layout = Object.assign({}, fig.layout || {});
  if (spec.theme) layout.template = theme[isDark(el) ? "dark" : "light"];
  const title = layout.title;
  if (typeof title === "string" && title) layout.title = {text: "<b>" + title + "</b>"};
  else if (title && typeof title.text === "string" && title.text) layout.title = Object.assign({}, title, {text: "<b>" + title.text + "</b>"});
  return {data: fig.data || [], layout};
}

// The toolbar's fullscreen button, as Streamlit's chart element has one: the chart fills the window until the
// button or Escape closes it.
const EXPAND = {width: 24, height: 24, path: "M3 3h7v2H5v5H3zM14 3h7v7h-2V5h-5zM3 14h2v5h5v2H3zM19 14h2v7h-7v-2h5z"};
const COLLAPSE = {width: 24, height: 24, path: "M8 3h2v7H3V8h5zM14 3h2v5h5v2h-7zM3 14h7v7H8v-5H3zM14 14h7v2h-5v5h-2z"};
let full = null;  // the chart record shown fullscreen

function setFullscreen(rec, on) {
  const Plotly = plotlyLib;
  if (!rec || (!Plotly && !rec.mapper)) return;
  if (on && full && full !== rec) setFullscreen(full, false);
  full = on ? rec : null;
  rec.full = on;
  const st = rec.div.style;
  if (on) {
    Object.assign(st, {position: "fixed", inset: "0", zIndex: "1000010", height: "100vh", width: "100vw",
                       background: rec.paper || "white"});
  } else {
    Object.assign(st, {position: "", inset: "", zIndex: "", height: rec.spec.height + "px", width: "100%", background: ""});
  }
  if (rec.mapper) {
    drawMapOf(rec);
    return;
  }
  const fig = themed(rec.spec, rec.theme, rec.parent);
  if (on) fig.layout = Object.assign({}, fig.layout, {height: window.innerHeight});
  Plotly.react(rec.div, fig.data, fig.layout, config(rec));
}

document.addEventListener("keydown", (e) => { if (e.key === "Escape" && full) setFullscreen(full, false); });

function config(rec) {
  const c = Object.assign({}, rec.spec.config);
  const on = !!rec.full;
  c.modeBarButtonsToAdd = [{name: on ? rec.spec.closeFullscreen : rec.spec.fullscreen, title: on ? rec.spec.closeFullscreen : rec.spec.fullscreen,
                            icon: on ? COLLAPSE : EXPAND, click: () => setFullscreen(rec, !on)}];
  return c;
}

async function draw(rec) {
  const spec = rec.pending;
  if (!spec || rec.drawing) return rec.drawing;
  rec.pending = null;
  rec.drawing = (async () => {
    try {
      const [Plotly, theme, lib, mapper] = await Promise.all([spec.map ? null : loadPlotly(spec.plotly),
                                                              loadTheme(spec.themeFile), spec.follow ? choices(spec) : null,
                                                              spec.map ? maps(spec) : null]);
      if (charts.get(rec.parent) !== rec) return;  // gone while loading
      if (lib) {
        const i = lib.variantOf(spec.follow);
        if (spec.shown && rec.variant === i && rec.drawnVersion === spec.version) return;  // drawn as it is
        spec.shown = variantFigure(spec.figure, spec.follow, i);
        rec.variant = i;
      }
      rec.spec = spec;
      rec.theme = theme;
      const fig = themed(spec, theme, rec.parent);
      // A figure whose plot needs a least width (a dense map's labels: layout.minreducedwidth) is drawn at least
      // that wide, margins added, and its box scrolls sideways where the column is narrower.
      const least = fig.layout.minreducedwidth
        ? fig.layout.minreducedwidth + ((fig.layout.margin || {}).l || 0) + ((fig.layout.margin || {}).r || 0) : 0;
      rec.div.style.minWidth = least ? least + "px" : "";
      rec.parent.style.overflowX = least ? "auto" : "";
      rec.paper = (fig.layout.template && fig.layout.template.layout && fig.layout.template.layout.paper_bgcolor) || "white";
      if (rec.full) fig.layout.height = window.innerHeight;
      rec.message.hidden = true;
      if (mapper) {
        if (rec.plotted) {  // drawn by Plotly before (a figure it alone draws): its plot goes, the box is ours again
          plotlyLib.purge(rec.div);
          rec.div.replaceChildren();
          rec.div.className = "atlas-chart";  // our class only: Plotly's own stays behind a purge
          rec.plotted = false;
          rec.listening = false;
        }
        rec.mapper = mapper;
        drawMapOf(rec);
      } else {
        if (rec.mapper) { rec.mapper.clear(rec.div); rec.mapper = null; }
        await Plotly.react(rec.div, fig.data, fig.layout, config(rec));
        rec.plotted = true;
      }
      if (spec.follow) rec.div.dataset.variant = String(rec.variant);  // drawn (benches wait for it)
      if (!rec.listening && rec.plotted) {  // a click on a clickable chart goes to Python (app.fast.chart.plot's return value)
        rec.listening = true;
        rec.div.on("plotly_click", (ev) => {
          const p = ev && ev.points && ev.points[0];
          if (rec.spec && rec.spec.clicks && p && rec.args.setTriggerValue) rec.args.setTriggerValue("click", {x: p.x, y: p.y});
        });
        const pointing = (on) => rec.div.classList.toggle("atlas-chart-pointing", on && !!(rec.spec && rec.spec.clicks));
        rec.div.on("plotly_hover", () => pointing(true));
        rec.div.on("plotly_unhover", () => pointing(false));
        rec.div.addEventListener("mouseleave", () => pointing(false));
      }
      if (!spec.clicks) rec.div.classList.remove("atlas-chart-pointing");
      rec.drawnVersion = spec.version;
      rec.dark = isDark(rec.parent);
      rec.width = rec.div.clientWidth;
      scrollCue(rec);
    } catch (e) {
      rec.message.textContent = spec.failed + " (" + (e && e.message ? e.message : e) + ")";
      rec.message.hidden = false;
      if (rec.drawnVersion == null) rec.div.style.height = "0px";  // the message takes the empty chart's place
    }
  })();
  await rec.drawing;
  rec.drawing = null;
  if (rec.pending && (rec.visible || rec.all)) return draw(rec);  // a newer figure came while this one drew
}

// Streamlit's page scrolls inside its main section, not the window; the observer must watch that section
// (an observer of the window would see every chart below the section's edge as clipped, whatever the margin).
const observers = new Map();  // scrolling element (null: the window) -> its IntersectionObserver
function scroller(el) {
  for (let p = el.parentElement; p; p = p.parentElement) {
    const y = getComputedStyle(p).overflowY;
    if (y === "auto" || y === "scroll") return p;
  }
  return null;
}
// Two observers per scrolling element: one for the screen itself (rec.onScreen), one for the band around it
// (rec.visible). A chart on the screen is drawn at once; one only near it is drawn when the browser is next idle, so
// a run that changed many charts shows the ones the learner sees first (and is done with them sooner).
const screens = new Map();  // scrolling element -> the observer of the screen itself
function observer(map, root, margin, seen) {
  let o = map.get(root);
  if (!o) {
    o = new IntersectionObserver((entries) => {
      for (const entry of entries) {
        const r = charts.get(entry.target.parentNode);
        if (r) seen(r, entry.isIntersecting);
      }
    }, {root, rootMargin: margin});
    map.set(root, o);
  }
  return o;
}
function watch(rec) {
  const root = scroller(rec.div);
  const screen = observer(screens, root, "0px", (r, on) => {
    r.onScreen = on;
    if (on && r.pending) draw(r);
  });
  const near = observer(observers, root, NEAR, (r, on) => {
    r.visible = on;
    if (on && r.pending) soon(r);
  });
  if (rec.observer !== near) {
    if (rec.observer) rec.observer.unobserve(rec.div);
    if (rec.screen) rec.screen.unobserve(rec.div);
    rec.observer = near;
    rec.screen = screen;
    screen.observe(rec.div);  // first: its answer (on the screen) comes before the band's
    near.observe(rec.div);
  }
}

// Draw a chart near the screen when the browser is idle (within a second at the latest), unless it is drawn by then.
const idle = window.requestIdleCallback || ((f) => setTimeout(f, 50));
function soon(rec) {
  if (rec.soon) return;
  rec.soon = true;
  idle(() => {
    rec.soon = false;
    if (charts.get(rec.parent) === rec && rec.pending) draw(rec);
  }, {timeout: 1000});
}

// Whether the chart's box scrolls sideways (its figure is wider than the column), and whether it is scrolled to
// its right end: the classes that show the scroll bar and the fade.
function scrollCue(rec) {
  const box = rec.parent;
  const wide = box.scrollWidth > box.clientWidth + 1;
  box.classList.toggle("atlas-chart-wide", wide);
  box.classList.toggle("atlas-chart-at-end", !wide || box.scrollLeft + box.clientWidth >= box.scrollWidth - 2);
  if (wide && !rec.scrollWatched) {
    rec.scrollWatched = true;
    box.addEventListener("scroll", () => scrollCue(rec), {passive: true});
  }
}

const sized = new ResizeObserver((entries) => {
  for (const entry of entries) {
    const rec = charts.get(entry.target.parentNode);
    if (!rec || rec.drawnVersion == null || !(plotlyLib || rec.mapper)) continue;
    scrollCue(rec);
    const w = rec.div.clientWidth;
    if (w > 0 && w !== rec.width) {
      rec.width = w;
      if (rec.mapper) drawMapOf(rec);
      else plotlyLib.Plots.resize(rec.div);
    }
  }
});

// `call`: the token of this call of the component's script (app/fast/chart.py, stub_js); its cleanup names it.
export function render(args, call) {
  const {data, parentElement} = args;
  let rec = charts.get(parentElement);
  if (!rec) {
    const div = document.createElement("div");
    div.className = "atlas-chart";
    div.style.width = "100%";
    const message = document.createElement("div");
    message.className = "atlas-chart-failed";
    message.hidden = true;
    Object.assign(message.style, {padding: "0.75rem 1rem", borderRadius: "0.5rem", color: "rgb(146, 108, 5)",
                                  background: "rgba(255, 227, 18, 0.1)"});
    parentElement.append(div, message);
    rec = {parent: parentElement, div, message, visible: false, pending: null, drawing: null, drawnVersion: null};
    charts.set(parentElement, rec);
    sized.observe(div);
  }
  rec.call = call;
  rec.args = args;  // this call's setTriggerValue, for clicks
  const spec = decode(data);
  if (spec.version === rec.drawnVersion && rec.dark === isDark(parentElement) && !rec.drawing) return;
  rec.pending = spec;
  if (!rec.full) rec.div.style.height = spec.height + "px";  // the page keeps its length while a chart waits
  if (rec.onScreen || rec.all) draw(rec);
  else if (rec.visible) soon(rec);
  else requestAnimationFrame(() => { if (charts.get(parentElement) === rec) watch(rec); });  // once laid out
}

// The element is gone, or the call `call` was overtaken before it returned (Streamlit then runs its cleanup at
// once, before or after the newer call): the chart goes, plot and message too, unless a newer call has it now.
export function unmount(parentElement, call) {
  const rec = charts.get(parentElement);
  if (!rec || rec.call !== call) return;
  charts.delete(parentElement);
  if (full === rec) full = null;
  if (rec.observer) rec.observer.unobserve(rec.div);
  if (rec.screen) rec.screen.unobserve(rec.div);
  sized.unobserve(rec.div);
  if (rec.mapper) rec.mapper.clear(rec.div);
  else if (plotlyLib) plotlyLib.purge(rec.div);
  rec.div.remove();
  rec.message.remove();
}

// Load Plotly and the theme before the first chart needs them.
export function preload(plotlyFile, themeFile) {
  return Promise.all([loadPlotly(plotlyFile), loadTheme(themeFile)]);
}

// One small figure of each trace type the app draws (app/charts: go.Heatmap, go.Scatter, go.Bar, go.Histogram,
// go.Image), with the layout features its figures use (category axes, a reversed axis, titles, a colour bar,
// a legend, binary arrays as Python's Plotly writes them). tests/browser/test_browser_pages.py checks the list against app/.
const WARM_FIGURES = [
  {data: [{type: "heatmap", x: ["a", "b"], y: ["a", "b"], xgap: 1, ygap: 1, zmin: 0, zmax: 1, texttemplate: "%{text}",
           z: {dtype: "f8", bdata: "AAAAAAAA8D8AAAAAAAAAAAAAAAAAAOA/AAAAAAAA4D8=", shape: "2, 2"},
           text: [["1.00", "0"], ["0.50", "0.50"]], colorscale: "Blues", hovertemplate: "%{y} · %{x}<br>%{z:.4g}<extra></extra>"}],
   layout: {xaxis: {side: "top", type: "category", title: {text: "k"}}, yaxis: {autorange: "reversed", type: "category", title: {text: "q"}},
            title: {text: "t", yref: "container", y: 1, yanchor: "top"}, height: 250, margin: {l: 70, r: 90, t: 100, b: 10}}},
  {data: [{type: "scatter", mode: "lines", name: "a", x: [0, 1], y: [0, 1]}, {type: "scatter", mode: "lines+markers", name: "b", x: [0, 1], y: [1, 0]}],
   layout: {xaxis: {type: "log", title: {text: "x"}}, yaxis: {title: {text: "y"}}, height: 300,
            legend: {orientation: "h", yanchor: "top", y: -0.18, x: 0, xanchor: "left"}}},
  {data: [{type: "bar", x: ["a", "b"], y: [0.3, 0.7], text: ["0.3", "0.7"], textposition: "outside"}],
   layout: {yaxis: {range: [0, 1.05]}, height: 300}},
  {data: [{type: "histogram", name: "a", x: [0, 1, 1, 2], opacity: 0.6, histnorm: "probability density"},
          {type: "histogram", name: "b", x: [1, 2, 2, 3], opacity: 0.6, histnorm: "probability density"}],
   layout: {barmode: "overlay", height: 300}},
  {data: [{type: "image", z: [[[0, 0, 0], [255, 255, 255]]], hoverinfo: "skip"}], layout: {height: 200}},
];

// Draw each of WARM_FIGURES once, off the screen, one per idle slot of the browser, and throw it away (app/fast/browser_warm.py
// calls this while the learner reads the first page). The first figure of each kind a tab draws runs Plotly's code
// for it for the first time, and the browser compiles that code then: in headless Chromium here the first chart
// page's opening did 0.3-0.4 s more work on the main thread than a second opening. Nothing is shown and nothing is
// sent to the server; the traces drawn are returned (in window.__atlasWarm.drawn).
export async function warmUp(plotlyFile, themeFile, idle) {
  const [Plotly, theme] = await preload(plotlyFile, themeFile);
  const box = document.createElement("div");
  box.className = "atlas-chart-warm";
  box.setAttribute("aria-hidden", "true");
  Object.assign(box.style, {position: "fixed", left: "-10000px", top: "0", width: "600px", visibility: "hidden",
                            pointerEvents: "none"});
  document.body.appendChild(box);
  const drawn = [];
  try {
    for (const fig of WARM_FIGURES) {
      await new Promise((resolve) => idle(resolve));
      const layout = Object.assign({template: theme[isDark() ? "dark" : "light"]}, fig.layout);
      // a chart of its own per figure, gone before the next idle wait: between two figures the document
      // holds no chart but the page's (whatever looks for those never meets a purged one)
      const gd = box.appendChild(document.createElement("div"));
      try {
        await Plotly.newPlot(gd, fig.data, layout, {displaylogo: false, responsive: false});
        Plotly.purge(gd);
      } finally {
        gd.remove();
      }
      drawn.push(fig.data[0].type);
    }
  } finally {
    box.remove();
  }
  return drawn;
}

export function drawAll() {
  const waits = [];
  for (const rec of charts.values()) {
    rec.all = true;
    waits.push(draw(rec));
  }
  return Promise.all(waits).then(() => charts.size);
}

// waiting(): how many charts near the screen still wait to be drawn with their newest figure (tests wait for none)
const waiting = () => [...charts.values()].filter((r) => r.pending && r.visible).length;
window.atlasCharts = {drawAll, count: () => charts.size, waiting};
window.addEventListener("beforeprint", () => { drawAll(); });
