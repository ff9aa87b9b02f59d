// Attention Atlas's browser choices (app/fast/choice.py is the Python half and says why).
//
// A slider that only changes what is drawn is answered here: a move publishes its value on the slider's channel
// (window.atlasChoiceBus, and the window event "atlas-choice"), and every chart (app/static/atlas_chart.js) and
// text (below) that follows the channel shows its variant for the value — no server run. The value goes into the
// page's link under the slider's name with history.replaceState, and into this tab's sessionStorage with what the
// page asked for then, so a link reproduces it and a page switch back finds it; "reset this page" or a tour stop
// changes what the page asks for, and then the page's value wins.

const bus = (window.atlasChoiceBus ||= {values: {}});
const boxes = new Map();  // the element's parent node -> its record
const STORE = "atlas-choice";

const STYLE = `
.atlas-choice {font-family: inherit; margin: 0 0 0.25rem 0}
.atlas-choice-head {display: flex; justify-content: space-between; align-items: baseline; gap: 0.5rem;
  font-size: 14px; margin-bottom: 0.25rem; color: var(--st-text-color, inherit)}
.atlas-choice-value {font-variant-numeric: tabular-nums; font-weight: 600; color: var(--st-primary-color, #ff4b4b)}
.atlas-choice input[type=range] {-webkit-appearance: none; appearance: none; width: 100%; height: 4px; margin: 0.7rem 0;
  border-radius: 2px; outline: none; cursor: pointer; --atlas-colour: var(--st-primary-color, #ff4b4b);
  background: linear-gradient(to right, var(--atlas-colour) 0 var(--atlas-fill, 0%),
    var(--st-secondary-background-color, #e6e9ef) var(--atlas-fill, 0%) 100%)}
.atlas-choice input[type=range]::-webkit-slider-thumb {-webkit-appearance: none; appearance: none; width: 12px; height: 12px;
  border-radius: 50%; background: var(--atlas-colour); border: none}
.atlas-choice input[type=range]::-moz-range-thumb {width: 12px; height: 12px; border-radius: 50%;
  background: var(--atlas-colour); border: none}
.atlas-choice input[type=range]:focus-visible::-webkit-slider-thumb {box-shadow: 0 0 0 0.25rem rgba(128, 128, 128, 0.35)}
.atlas-choice input[type=range]:focus-visible::-moz-range-thumb {box-shadow: 0 0 0 0.25rem rgba(128, 128, 128, 0.35)}
.atlas-choice-ends {display: flex; justify-content: space-between; font-size: 12px; opacity: 0.7;
  font-variant-numeric: tabular-nums}
.atlas-choice-text {font-family: inherit; color: var(--st-text-color, inherit); margin: 0 0 1rem 0; line-height: 1.6}
.atlas-choice-text.small {font-size: 14px; opacity: 0.75}
.atlas-choice-text code {font-size: 0.9em}
.atlas-choice-text.metric {line-height: normal}
.atlas-choice-text.table {line-height: 1.6; margin-bottom: 0}
.atlas-choice-text.table table {border-collapse: collapse; margin: 0}
.atlas-choice-text.table th, .atlas-choice-text.table td {padding: 6px 12px; vertical-align: middle;
  border: 1px solid var(--st-dataframe-border-color, var(--st-border-color, rgba(49, 51, 63, 0.2)))}
.atlas-choice-text.table th {font-weight: 700}
.atlas-metric-label {font-size: 14px; margin-bottom: 0.25rem}
.atlas-metric-value {font-size: var(--st-metric-value-font-size, 2.25rem); font-weight: var(--st-metric-value-font-weight, 400);
  line-height: 1.2; padding-bottom: 0.25rem; white-space: nowrap}
`;

function decode(data) {
  if (data instanceof Uint8Array || data instanceof ArrayBuffer) return JSON.parse(new TextDecoder().decode(data));
  return typeof data === "string" ? JSON.parse(data) : data;
}

function el(tag, props = {}, ...children) {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
}

// The index of the value nearest to `v` (a link's or a stored value may lie between or beyond the values now offered).
export function nearest(values, v) {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (Math.abs(values[i] - v) < Math.abs(values[best] - v)) best = i;
  return best;
}

function publish(channel, value) {
  if (bus.values[channel] === value) return;
  bus.values[channel] = value;
  window.dispatchEvent(new CustomEvent("atlas-choice", {detail: {channel}}));
}

// ------------------------------------------------------------------------- the link and the tab's memory

// The link's parameters that the browser owns (a choice's value, the attention view's `view`), one set per page.
// Streamlit's front end writes the whole query string after a run that changed a parameter, from what it last got
// from the server, which never saw the browser's own: every history.pushState / replaceState of the page's address is
// given the page's owned parameters back (the History API wrapped once per tab), so a run never drops them. A page
// switch writes another path: the old page's parameters stay out of it, and come back with the page.
const keeper = (window.atlasLinkKeeper ||= (() => {
  const owned = new Map();  // pathname -> {param: text}
  const merged = (url) => {
    try {
      const u = new URL(url, window.location.href), mine = owned.get(u.pathname);
      if (!mine) return url;
      let changed = false;
      for (const [k, v] of Object.entries(mine)) {
        if (u.searchParams.get(k) !== v) { u.searchParams.set(k, v); changed = true; }
      }
      return changed ? u.href : url;
    } catch (e) {
      return url;
    }
  };
  for (const name of ["pushState", "replaceState"]) {
    const original = window.history[name].bind(window.history);
    window.history[name] = (state, title, url) => original(state, title, url == null ? url : merged(url));
  }
  return {
    set(param, text) {
      const path = window.location.pathname, mine = owned.get(path) || {};
      mine[param] = text;
      owned.set(path, mine);
      const u = new URL(window.location.href);
      if (u.searchParams.get(param) !== text) {
        u.searchParams.set(param, text);
        window.history.replaceState(window.history.state, "", u);
      }
    },
  };
})());

// Put `text` in this page's link under `param`, and keep it there across the page's runs.
export function keepInLink(param, text) {
  keeper.set(param, text);
}

function storeKey(spec) {
  return `${STORE}:${window.location.pathname}:${spec.channel}`;
}

function remember(rec) {
  const {spec, wanted} = rec;
  try {
    sessionStorage.setItem(storeKey(spec), JSON.stringify({value: wanted, asked: spec.asked}));
  } catch (e) { /* storage off: the link still holds it */ }
  if (spec.param) keepInLink(spec.param, String(wanted));  // the learner's value: shown where it fits, else the nearest
}

// The first value of a new slider: the link's, else the learner's last one on this page while the page asks for the
// same as then, else the page's.
function firstValue(spec) {
  const raw = spec.param ? new URL(window.location.href).searchParams.get(spec.param) : null;
  if (raw !== null && raw.trim() !== "" && Number.isFinite(Number(raw))) return Number(raw);
  let stored = null;
  try { stored = JSON.parse(sessionStorage.getItem(storeKey(spec)) || "null"); } catch (e) { /* none */ }
  if (stored && stored.asked === spec.asked && Number.isFinite(stored.value)) return stored.value;
  return spec.values[spec.index];
}

// ------------------------------------------------------------------------- the slider

function show(rec) {
  const {spec, index} = rec;
  rec.input.max = String(spec.values.length - 1);
  rec.input.value = String(index);
  const last = spec.values.length - 1;
  rec.input.style.setProperty("--atlas-fill", `${last > 0 ? (100 * index) / last : 0}%`);
  rec.input.setAttribute("aria-valuetext", spec.labels[index]);
  rec.said.textContent = spec.labels[index];
  rec.low.textContent = spec.labels[0];
  rec.high.textContent = spec.labels[spec.values.length - 1];
  rec.label.textContent = spec.label;
  rec.input.setAttribute("aria-label", spec.label);
  rec.root.title = spec.help || "";
}

function moved(rec) {
  rec.index = Number(rec.input.value);
  rec.wanted = rec.spec.values[rec.index];
  show(rec);
  remember(rec);
  publish(rec.spec.channel, rec.wanted);
}

function renderSlider(parentElement, spec, call) {
  let rec = boxes.get(parentElement);
  if (!rec || rec.kind !== "slider") {
    if (rec) rec.root.remove();
    const label = el("span", {className: "atlas-choice-label"});
    const said = el("span", {className: "atlas-choice-value"});
    const input = el("input", {type: "range", min: "0", step: "1"});
    input.dataset.channel = spec.channel;
    const low = el("span"), high = el("span");
    const root = el("div", {className: "atlas-choice"}, el("div", {className: "atlas-choice-head"}, label, said), input,
                    el("div", {className: "atlas-choice-ends"}, low, high));
    parentElement.append(root);
    rec = {kind: "slider", root, label, said, input, low, high, spec: null};
    input.addEventListener("input", () => moved(rec));
    boxes.set(parentElement, rec);
  }
  rec.call = call;
  // the learner's value while the page asks for the same as before; the page's after a reset, a tour stop or a link
  const wanted = rec.spec && rec.spec.asked === spec.asked ? rec.wanted : (rec.spec ? spec.values[spec.index] : firstValue(spec));
  rec.spec = spec;
  rec.wanted = wanted;
  rec.index = nearest(spec.values, wanted);  // shown: the nearest that fits; the learner's own value comes back
  show(rec);
  remember(rec);
  publish(spec.channel, spec.values[rec.index]);
}

// ------------------------------------------------------------------------- a text that follows

// The variant of a follower for the channels' values now (its own first variant where a channel has none yet).
export function variantOf(follow) {
  let index = 0;
  for (const c of follow.channels) {
    const v = bus.values[c.name];
    if (v === undefined) return follow.initial;
    index = index * c.values.length + nearest(c.values, v);
  }
  return index;
}

function showText(rec) {
  const i = variantOf(rec.spec);
  if (i === rec.shown) return;
  rec.shown = i;
  rec.root.innerHTML = rec.spec.texts[i];  // escaped by the server (app.fast.choice): only b, i, code, a metric's two divs, a table
  rec.root.title = (rec.spec.titles && rec.spec.titles[i]) || "";  // a metric's help, as a tooltip
  rec.root.dataset.variant = String(i);
}

function renderText(parentElement, spec, call) {
  let rec = boxes.get(parentElement);
  if (!rec || rec.kind !== "text") {
    if (rec) rec.root.remove();
    const root = el("div", {className: "atlas-choice-text"});
    parentElement.append(root);
    rec = {kind: "text", root};
    rec.listen = (e) => { if (rec.spec.channels.some((c) => c.name === e.detail.channel)) showText(rec); };
    window.addEventListener("atlas-choice", rec.listen);
    boxes.set(parentElement, rec);
  }
  rec.call = call;
  rec.spec = spec;
  rec.shown = null;
  rec.root.classList.toggle("small", !!spec.small);
  rec.root.classList.toggle("metric", !!spec.metric);
  rec.root.classList.toggle("table", !!spec.table);
  showText(rec);
}

export function render(args, call) {
  if (!document.getElementById("atlas-choice-style")) {
    document.head.append(el("style", {id: "atlas-choice-style", textContent: STYLE}));
  }
  const spec = decode(args.data);
  if (spec.kind === "text") renderText(args.parentElement, spec, call);
  else renderSlider(args.parentElement, spec, call);
}

export function unmount(parentElement, call) {
  const rec = boxes.get(parentElement);
  if (!rec || rec.call !== call) return;
  boxes.delete(parentElement);
  if (rec.listen) window.removeEventListener("atlas-choice", rec.listen);
  rec.root.remove();
}
