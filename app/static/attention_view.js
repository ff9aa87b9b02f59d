// Attention Atlas's attention view, in the browser (app/fast/attention_view.py is its Python half and says why).
//
// It gets a sentence's whole attention once and answers every choice that only changes the drawing here: the kind
// of attention, the layer, the head, a tile of the grid (clicked: its map opens enlarged below), a token hovered
// (its row of the map, or its lines in the head view, lit), a query picked (a decoding step, for a decoder). Each
// choice goes into the page's link (?view=kind.layer.head.query) with history.replaceState, and into this tab's
// sessionStorage, so the link reproduces the view and a page switch back finds it again — with no server run.
// Tokens are drawn with canvas fillText and textContent: a token is text, never HTML.

const views = new Map();  // the element's parent node -> its view record
const STORE = "atlas-attention-view";
const FONT = "12px 'Source Sans Pro', 'Source Sans 3', 'Noto Sans CJK KR', sans-serif";

function decode(data) {
  const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = view.getUint32(0, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + n)));
  const start = bytes.byteOffset + 4 + n;
  const count = (bytes.byteLength - 4 - n) / 2;
  // a copy when the bytes sit at an odd offset of their buffer (a Uint16Array needs an even one)
  const words = start % 2 === 0 ? new Uint16Array(bytes.buffer, start, count)
                                : new Uint16Array(bytes.slice(4 + n).buffer);
  return {header, words, size: bytes.byteLength};
}

function el(tag, props = {}, ...children) {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
}

// ------------------------------------------------------------------------- the numbers

function kindOf(rec) {
  return rec.header.kinds.find((k) => k.id === rec.state.kind) || rec.header.kinds[0];
}

// One (nq x nk) map as floats: layer l, head h (0-based); l or h = -1 averages over layers or heads. A map of one
// layer and head is read straight from the payload; a mean adds the maps it covers, row after row.
function map(rec, kind, l, h) {
  const {layers, heads, nq, nk, offset} = kind, size = nq * nk, out = new Float32Array(size);
  const ls = l < 0 ? [...Array(layers).keys()] : [l], hs = h < 0 ? [...Array(heads).keys()] : [h];
  for (const a of ls) {
    for (const b of hs) {
      const start = offset + (a * heads + b) * size;
      for (let x = 0; x < size; x++) out[x] += rec.words[start + x];
    }
  }
  const norm = 1 / (ls.length * hs.length * rec.header.scale);
  for (let x = 0; x < size; x++) out[x] *= norm;
  return out;
}

// The colour scale as Python's charts use it: [[stop, "rgb(r, g, b)"], ...] -> a table of LEVELS colours
// [r, g, b] on 0…1 (finer than the eye tells apart), and the CSS colour of a weight.
const LEVELS = 256;
function scaleOf(stops) {
  const parsed = stops.map(([s, c]) => [s, c.match(/\d+(\.\d+)?/g).map(Number)]);
  const table = new Uint8ClampedArray(LEVELS * 3);
  for (let n = 0; n < LEVELS; n++) {
    const x = n / (LEVELS - 1);
    let k = 1;
    while (k < parsed.length - 1 && parsed[k][0] < x) k++;
    const [s0, c0] = parsed[k - 1], [s1, c1] = parsed[k];
    const f = s1 > s0 ? (x - s0) / (s1 - s0) : 0;
    for (let i = 0; i < 3; i++) table[n * 3 + i] = Math.round(c0[i] + f * (c1[i] - c0[i]));
  }
  return table;
}

// ------------------------------------------------------------------------- the link and the tab's memory

function choiceText(s) {
  return `${s.kind}.${s.layer}.${s.head}.${s.query}`;
}

function parseChoice(text, kinds) {
  if (!text) return null;
  const [id, ...nums] = text.split(".");
  const kind = kinds.find((k) => k.id === id) || kinds[0];  // another kind: its numbers, where they fit
  if (nums.length !== 3 || !nums.every((x) => /^\d+$/.test(x))) return null;
  const [layer, head, query] = nums.map(Number);
  if (layer > kind.layers || head > kind.heads || query > kind.nq) return null;
  return {kind: kind.id, layer, head, query};
}

// The tab's memory of a page's view: the learner's last choice, with the first view the page asked for then (its
// own inputs: a link, a tour stop). One entry per page.
function storeKey(header) {
  return `${STORE}:${window.location.pathname}:${header.param}`;
}

function remember(rec) {
  const text = choiceText(rec.state);
  try {
    sessionStorage.setItem(storeKey(rec.header), JSON.stringify({choice: text, asked: rec.header.asked}));
  } catch (e) { /* storage off: the link still holds it */ }
  // the link keeper (app/static/atlas_choice.js) keeps it in the link across the page's runs
  import(new URL(rec.header.linkModule, import.meta.url).href).then((m) => m.keepInLink(rec.header.param, text));
}

// The first view: the link's, else the learner's last one on this page unless the page now asks for another (its
// inputs changed since: a tour stop set them), else what the page asks for.
function firstChoice(header) {
  const inLink = parseChoice(new URL(window.location.href).searchParams.get(header.param), header.kinds);
  if (inLink) return inLink;
  let stored = null;
  try { stored = JSON.parse(sessionStorage.getItem(storeKey(header)) || "null"); } catch (e) { /* none */ }
  if (stored && stored.asked === header.asked) {
    const last = parseChoice(stored.choice, header.kinds);
    if (last) return last;
  }
  return {...header.initial};
}

// ------------------------------------------------------------------------- drawing

function buttons(rec, name, count, meanLabel, labelOf) {
  const row = el("div", {className: "atlas-view-row"});
  row.append(el("span", {className: "atlas-view-label", textContent: rec.header.words[name]}));
  const values = [...Array(count).keys()].map((i) => i + 1);
  if (meanLabel) values.push(0);
  for (const v of values) {
    const b = el("button", {type: "button", textContent: v === 0 ? meanLabel : labelOf(v)});
    b.dataset.name = name;
    b.dataset.value = String(v);
    b.setAttribute("aria-pressed", String(rec.state[name] === v));
    b.addEventListener("click", () => choose(rec, {[name]: v}, `button[data-name="${name}"][data-value="${v}"]`));
    row.append(b);
  }
  return row;
}

function toolbar(rec) {
  const kind = kindOf(rec), w = rec.header.words, bar = el("div", {className: "atlas-view-bar"});
  if (rec.header.kinds.length > 1) {
    const row = el("div", {className: "atlas-view-row"}, el("span", {className: "atlas-view-label", textContent: w.kind}));
    for (const k of rec.header.kinds) {
      const b = el("button", {type: "button", textContent: k.label});
      b.dataset.name = "kind";
      b.dataset.value = k.id;
      b.setAttribute("aria-pressed", String(k.id === kind.id));
      b.addEventListener("click", () => choose(rec, {kind: k.id}, `button[data-name="kind"][data-value="${k.id}"]`));
      row.append(b);
    }
    bar.append(row);
  }
  // the head view draws every head at once, each in its colour (not their mean)
  const everyHead = rec.header.mode === "heads" ? w.all_heads : w.mean;
  // one layer (the multi-head page's, a model trained with one): no layer to choose, and its "mean" is that layer
  if (kind.layers > 1) bar.append(buttons(rec, "layer", kind.layers, w.mean, String));
  bar.append(buttons(rec, "head", kind.heads, everyHead, String));
  const range = el("input", {type: "range", min: "0", max: String(kind.nq), step: "1", value: String(rec.state.query)});
  range.dataset.name = "query";
  range.addEventListener("input", () => choose(rec, {query: Number(range.value)}, "input[data-name='query']"));
  const said = el("span", {className: "atlas-view-said", textContent: queryWords(rec, kind)});
  bar.append(el("div", {className: "atlas-view-row"},
                el("span", {className: "atlas-view-label", textContent: kind.decoder ? w.step : w.query}), range, said));
  return bar;
}

function queryWords(rec, kind) {
  const q = rec.state.query;
  return q === 0 ? rec.header.words.all_queries : `${q}: ${kind.q[q - 1]}`;
}

function tileSize(rec, kind) {
  const width = rec.root.clientWidth || 700;
  return Math.max(18, Math.min(72, Math.floor((width - 70) / kind.heads) - 4));
}

// The later keys of a causal kind: masked, whatever their weight (a weight of 0 alone is no sign of a mask).
function isMasked(kind, i, j) {
  return kind.causal && j > i + (kind.nk - kind.nq);
}

const MASKED = [217, 217, 222];  // a masked cell: grey, apart from the colour scale's lightest blue at every size

// The map drawn cell by cell into an (nk x nq) image, then scaled onto `canvas` at (x, y) without smoothing: one
// pass over the numbers, however many pixels a cell takes. Rows other than the focused query (1-based) are faint.
function paintMap(canvas, rec, kind, values, x, y, width, height, focus) {
  const {nq, nk} = kind, table = rec.colour, top = kind.top || 1;  // top: the weight drawn darkest
  const image = new ImageData(nk, nq), px = image.data;
  for (let i = 0; i < nq; i++) {
    const alpha = focus && focus !== i + 1 ? 64 : 255;
    for (let j = 0; j < nk; j++) {
      const o = (i * nk + j) * 4;
      if (isMasked(kind, i, j)) {
        px[o] = MASKED[0]; px[o + 1] = MASKED[1]; px[o + 2] = MASKED[2];
      } else {
        const n = Math.round(Math.min(1, Math.max(0, values[i * nk + j] / top)) * (LEVELS - 1)) * 3;
        px[o] = table[n]; px[o + 1] = table[n + 1]; px[o + 2] = table[n + 2];
      }
      px[o + 3] = alpha;
    }
  }
  const cells = paintMap.canvas ||= document.createElement("canvas");
  cells.width = nk;
  cells.height = nq;
  cells.getContext("2d").putImageData(image, 0, 0);
  const ctx = canvas.getContext("2d");
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(cells, x, y, width, height);
}

// The grid's tiles depend on the numbers and the width only: built once per kind and tile size, and kept from one
// drawing to the next (a choice only moves the outline), so a click never repaints every head of a large model.
function grid(rec, kind) {
  const size = tileSize(rec, kind), id = `${kind.id}:${size}`;
  if (!rec.grid || rec.grid.id !== id) rec.grid = {id, box: scroller(buildGrid(rec, kind, size))};
  for (const c of rec.grid.box.querySelectorAll(".atlas-view-tile")) {
    c.classList.toggle("atlas-view-chosen", rec.state.layer === Number(c.dataset.layer) &&
                                             rec.state.head === Number(c.dataset.head));
  }
  return rec.grid.box;
}

function buildGrid(rec, kind, size) {
  const w = rec.header.words;
  const box = el("div", {className: "atlas-view-grid"});
  box.append(el("div", {className: "atlas-view-hint", textContent: kind.layers > 1 ? w.grid_hint : w.grid_hint_heads}));
  if (kind.groups) {
    const row = el("div", {className: "atlas-view-tiles"}, el("span", {className: "atlas-view-rowname"}));
    const per = kind.heads / kind.groups.length;
    for (const g of kind.groups) {
      row.append(el("span", {className: "atlas-view-group", textContent: g,
                             style: `width:${per * (size + 4) - 4}px`}));
    }
    box.append(row);
  }
  for (let l = 0; l < kind.layers; l++) {
    const row = el("div", {className: "atlas-view-tiles"},
                   el("span", {className: "atlas-view-rowname", textContent: `${w.layer} ${l + 1}`}));
    for (let h = 0; h < kind.heads; h++) {
      const c = el("canvas", {width: size, height: size, title: `${w.layer} ${l + 1} · ${w.head} ${h + 1}`});
      c.className = "atlas-view-tile";
      c.dataset.layer = String(l + 1);
      c.dataset.head = String(h + 1);
      paintMap(c, rec, kind, map(rec, kind, l, h), 0, 0, size, size, 0);
      c.tabIndex = 0;  // a tile is reached with Tab and opened with Enter or Space, as a button is
      c.setAttribute("role", "button");
      c.setAttribute("aria-label", c.title);
      c.addEventListener("click", () => choose(rec, {layer: l + 1, head: h + 1}));
      c.addEventListener("keydown", (e) => {
        if (e.key === "Enter" || e.key === " ") {
          e.preventDefault();
          choose(rec, {layer: l + 1, head: h + 1}, `.atlas-view-tile[data-layer="${l + 1}"][data-head="${h + 1}"]`);
        }
      });
      row.append(c);
    }
    box.append(row);
  }
  return box;
}

function measure(text) {
  const ctx = measure.ctx ||= document.createElement("canvas").getContext("2d");
  ctx.font = FONT;
  return ctx.measureText(text).width;
}

function detail(rec, kind) {
  const w = rec.header.words, s = rec.state;
  const values = map(rec, kind, s.layer - 1, s.head - 1);
  const left = Math.min(160, Math.ceil(Math.max(...kind.q.map(measure), 20)) + 10);
  const top = Math.min(160, Math.ceil(Math.max(...kind.k.map(measure), 20)) + 10);
  const avail = Math.max(200, (rec.root.clientWidth || 700) - left - 10);
  const cell = Math.max(8, Math.min(30, Math.floor(avail / kind.nk)));
  const canvas = el("canvas", {width: left + cell * kind.nk, height: top + cell * kind.nq});
  canvas.className = "atlas-view-detail";
  Object.assign(canvas.dataset, {left, top, cell, rows: kind.nq, cols: kind.nk});  // where each cell is drawn
  const ctx = canvas.getContext("2d");
  paintMap(canvas, rec, kind, values, left, top, cell * kind.nk, cell * kind.nq, s.query);
  const ink = getComputedStyle(rec.root).color;  // the theme's text colour (light or dark pages)
  const every = Math.ceil(13 / cell);  // a label every `every` rows and columns: 13 px apart at least
  const labels = () => {
    ctx.font = FONT;
    ctx.fillStyle = ink;
    ctx.textBaseline = "middle";
    ctx.textAlign = "right";
    kind.q.forEach((t, i) => { if (i % every === 0) ctx.fillText(t, left - 5, top + (i + 0.5) * cell, left - 8); });
    ctx.save();
    ctx.translate(left, top - 5);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "left";
    kind.k.forEach((t, j) => { if (j % every === 0) ctx.fillText(t, 0, (j + 0.5) * cell, top - 8); });
    ctx.restore();
  };
  labels();
  // A key the causal mask hides (a later one) is marked ✕; an open weight that is 0 to three decimals (a peaked
  // softmax underflows to exactly 0 in float32) is not: only the mask says what is masked. Big cells carry their weight.
  const masked = (i, j) => isMasked(kind, i, j);
  ctx.font = FONT;
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  for (let i = 0; i < kind.nq; i++) {
    for (let j = 0; j < kind.nk; j++) {
      const v = values[i * kind.nk + j], x = left + (j + 0.5) * cell, yy = top + (i + 0.5) * cell;
      if (masked(i, j) && cell >= 10) {
        ctx.fillStyle = "#6b6d75";
        ctx.fillText("✕", x, yy);
      } else if (cell >= 28) {  // on the scale's dark half white digits (its rows drawn faint: dark ones), else dark
        const faint = s.query && s.query !== i + 1;
        ctx.fillStyle = v / (kind.top || 1) > 0.5 && !faint ? "#ffffff" : "#31333f";
        ctx.fillText(v.toFixed(2), x, yy);
      }
    }
  }
  const title = `${kind.label} · ${w.layer} ${s.layer || w.mean} · ${w.head} ${s.head || w.mean}`;
  const readout = el("div", {className: "atlas-view-readout", textContent: w.hover_hint});
  canvas.addEventListener("mousemove", (e) => {
    const r = canvas.getBoundingClientRect();
    const x = (e.clientX - r.left) * canvas.width / r.width - left, y = (e.clientY - r.top) * canvas.height / r.height - top;
    const i = Math.floor(y / cell), j = Math.floor(x / cell);
    if (i < 0 || j < 0 || i >= kind.nq || j >= kind.nk) { readout.textContent = w.hover_hint; return; }
    const v = values[i * kind.nk + j];
    readout.textContent = `${kind.qTitle} ${i + 1} “${kind.q[i]}” → ${kind.kTitle} ${j + 1} “${kind.k[j]}”: ` +
                          (masked(i, j) ? `0 (${w.masked})` : v.toFixed(3));
  });
  canvas.addEventListener("click", (e) => {
    const r = canvas.getBoundingClientRect();
    const i = Math.floor(((e.clientY - r.top) * canvas.height / r.height - top) / cell);
    if (i >= 0 && i < kind.nq) choose(rec, {query: rec.state.query === i + 1 ? 0 : i + 1});
  });
  const csv = () => {
    const cellText = (t) => `"${String(t).replace(/"/g, '""')}"`;
    const lines = [["", ...kind.k].map(cellText).join(",")];
    for (let i = 0; i < kind.nq; i++) {
      lines.push([cellText(kind.q[i]), ...Array.from(values.subarray(i * kind.nk, (i + 1) * kind.nk), (v) => v.toFixed(5))].join(","));
    }
    return URL.createObjectURL(new Blob([lines.join("\n") + "\n"], {type: "text/csv"}));
  };
  const link = el("a", {textContent: w.download, href: "#", className: "atlas-view-download"});
  link.addEventListener("click", () => {
    link.href = csv();
    link.download = `attention-${kind.id}-L${s.layer || "mean"}-H${s.head || "mean"}.csv`;
  });
  const key = kind.causal ? el("div", {className: "atlas-view-hint", textContent: w.masked_hint}) : "";
  return el("div", {className: "atlas-view-detailbox"}, el("div", {className: "atlas-view-title", textContent: title}),
            scroller(canvas), readout, key, link);
}

// BertViz's head view: queries left, keys right, a line from each query to each key, as strong as its weight; one
// colour per head. A token hovered (or the query picked) keeps only its lines.
function headView(rec, kind) {
  const w = rec.header.words, s = rec.state;
  const heads = s.head === 0 ? [...Array(kind.heads).keys()] : [s.head - 1];
  const rows = Math.max(kind.nq, kind.nk), line = 22, width = Math.min(520, Math.max(300, (rec.root.clientWidth || 600) - 20));
  const side = Math.min(180, Math.ceil(Math.max(...kind.q.map(measure), ...kind.k.map(measure), 30)) + 12);
  const canvas = el("canvas", {width, height: rows * line + 24});
  canvas.className = "atlas-view-lines";
  const maps = heads.map((h) => map(rec, kind, s.layer - 1, h));
  const y = (i, n) => 12 + (rows * line) * (n > 1 ? i / (n - 1) : 0.5) * (rows - 1) / rows + line / 2;
  const draw = (only) => {  // only: {side: "q" | "k", index} or null
    const ctx = canvas.getContext("2d");
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    ctx.font = FONT;
    ctx.textBaseline = "middle";
    const x0 = side, x1 = width - side;
    heads.forEach((h, n) => {
      ctx.strokeStyle = rec.header.headColours[h % rec.header.headColours.length];
      const m = maps[n];
      for (let i = 0; i < kind.nq; i++) {
        if (s.query && s.query !== i + 1) continue;
        if (only && only.side === "q" && only.index !== i) continue;
        for (let j = 0; j < kind.nk; j++) {
          if (only && only.side === "k" && only.index !== j) continue;
          const v = m[i * kind.nk + j];
          if (v < 0.02) continue;
          ctx.globalAlpha = Math.min(1, 0.1 + 0.9 * v / Math.sqrt(heads.length));
          ctx.lineWidth = 1 + 3 * v;
          ctx.beginPath();
          ctx.moveTo(x0, y(i, kind.nq));
          ctx.lineTo(x1, y(j, kind.nk));
          ctx.stroke();
        }
      }
    });
    ctx.globalAlpha = 1;
    ctx.fillStyle = getComputedStyle(rec.root).color;
    ctx.textAlign = "right";
    kind.q.forEach((t, i) => {
      ctx.font = (only && only.side === "q" && only.index === i) || s.query === i + 1 ? "bold " + FONT : FONT;
      ctx.fillText(t, x0 - 6, y(i, kind.nq), side - 10);
    });
    ctx.textAlign = "left";
    kind.k.forEach((t, j) => {
      ctx.font = only && only.side === "k" && only.index === j ? "bold " + FONT : FONT;
      ctx.fillText(t, x1 + 6, y(j, kind.nk), side - 10);
    });
  };
  draw(null);
  const nearest = (e) => {
    const r = canvas.getBoundingClientRect();
    const x = (e.clientX - r.left) * canvas.width / r.width, yy = (e.clientY - r.top) * canvas.height / r.height;
    if (x < side) return {side: "q", n: kind.nq};
    if (x > width - side) return {side: "k", n: kind.nk};
    return null;
  };
  const readout = el("div", {className: "atlas-view-readout", textContent: w.lines_hint});
  canvas.addEventListener("mousemove", (e) => {
    const at = nearest(e);
    if (!at) { rec.hover = null; draw(null); readout.textContent = w.lines_hint; return; }
    const r = canvas.getBoundingClientRect(), yy = (e.clientY - r.top) * canvas.height / r.height;
    let best = 0;
    for (let i = 0; i < at.n; i++) if (Math.abs(y(i, at.n) - yy) < Math.abs(y(best, at.n) - yy)) best = i;
    rec.hover = {side: at.side, index: best};
    draw(rec.hover);
    const tokens = at.side === "q" ? kind.q : kind.k;
    readout.textContent = `${at.side === "q" ? kind.qTitle : kind.kTitle} ${best + 1} “${tokens[best]}”`;
  });
  canvas.addEventListener("mouseleave", () => { rec.hover = null; draw(null); readout.textContent = w.lines_hint; });
  const legend = el("div", {className: "atlas-view-legend"});
  for (const h of heads) {
    legend.append(el("span", {textContent: `${w.head} ${h + 1}`,
                              style: `border-left: 14px solid ${rec.header.headColours[h % rec.header.headColours.length]}`}));
  }
  const titles = el("div", {className: "atlas-view-sides"}, el("b", {textContent: kind.qTitle}), el("b", {textContent: kind.kTitle}));
  titles.style.width = width + "px";
  return el("div", {className: "atlas-view-headbox"},
            el("div", {className: "atlas-view-title", textContent: `${kind.label} · ${w.layer} ${s.layer || w.mean}`}),
            titles, scroller(canvas), readout, legend);
}

function draw(rec) {
  const kind = kindOf(rec);
  const parts = [toolbar(rec)];
  if (rec.header.mode === "heads") parts.push(headView(rec, kind));
  else parts.push(grid(rec, kind), detail(rec, kind));
  rec.root.replaceChildren(...parts);
  rec.root.querySelectorAll(".atlas-view-scroll").forEach(scrollCue);
  rec.root.dataset.choice = choiceText(rec.state);
  rec.root.dataset.drawn = String((rec.root.dataset.drawn | 0) + 1);
}

function choose(rec, change, focus) {
  const next = {...rec.state, ...change};
  if (change.kind && change.kind !== rec.state.kind) {  // sizes differ between kinds: keep what fits
    const kind = rec.header.kinds.find((k) => k.id === change.kind);
    next.layer = Math.min(next.layer, kind.layers);
    next.head = Math.min(next.head, kind.heads);
    next.query = Math.min(next.query, kind.nq);
  }
  rec.state = next;
  remember(rec);
  draw(rec);
  if (focus) {  // the control used keeps the keyboard's focus in the new drawing
    const again = rec.root.querySelector(focus);
    if (again) again.focus();
  }
}

// A map wider than its column shows that it scrolls, as the app's charts do: its scroll bar always, and its right
// edge faded while there is more to the right.
const FADE = "linear-gradient(to right, #000 calc(100% - 56px), rgba(0, 0, 0, 0.3))";

function scrollCue(box) {
  const wide = box.scrollWidth > box.clientWidth + 1;
  box.classList.toggle("atlas-view-wide", wide);
  box.classList.toggle("atlas-view-at-end", !wide || box.scrollLeft + box.clientWidth >= box.scrollWidth - 2);
}

function scroller(child) {
  const box = el("div", {className: "atlas-view-scroll"}, child);
  box.addEventListener("scroll", () => scrollCue(box), {passive: true});
  return box;
}

const STYLE = `
.atlas-view {font-size: 14px; font-family: var(--st-font, 'Source Sans Pro', sans-serif); color: var(--st-text-color, #31333f)}
.atlas-view-row {display: flex; flex-wrap: wrap; align-items: center; gap: 4px; margin: 2px 0}
.atlas-view-label {min-width: 4.5em; font-weight: 600}
.atlas-view-row button {border: 1px solid var(--st-border-color, #d0d3da); background: var(--st-background-color, #fff);
  color: inherit; border-radius: 6px; padding: 1px 8px; font: inherit; cursor: pointer; min-width: 2em}
.atlas-view-row button[aria-pressed='true'] {background: #1f77b4; border-color: #1f77b4; color: #fff}
.atlas-view-row input[type=range] {width: 14em}
.atlas-view-said, .atlas-view-hint, .atlas-view-readout {opacity: 0.8; font-size: 13px; min-height: 1.3em}
.atlas-view-tiles {display: flex; align-items: center; gap: 4px; margin-top: 4px}
.atlas-view-rowname {width: 62px; font-size: 12px; opacity: 0.8; flex: none}
.atlas-view-group {font-size: 11px; opacity: 0.8; text-align: center; border-bottom: 1px solid currentColor; flex: none}
.atlas-view-tile {cursor: pointer; outline: 1px solid #e3e5ea}
.atlas-view-tile:hover, .atlas-view-tile:focus-visible {outline: 2px solid #ff7f0e}
.atlas-view-chosen {outline: 3px solid #d62728 !important}
.atlas-view-title {font-weight: 600; margin-top: 10px}
.atlas-view-scroll {overflow-x: auto; max-width: 100%}
.atlas-view-wide {overflow-x: scroll; scrollbar-width: auto; scrollbar-color: #8a8a8a #e8e8e8}
.atlas-view-wide:not(.atlas-view-at-end) {mask-image: ${FADE}; -webkit-mask-image: ${FADE}}
.atlas-view-detail, .atlas-view-lines {display: block; cursor: crosshair}
.atlas-view-legend {display: flex; flex-wrap: wrap; gap: 10px; font-size: 12px}
.atlas-view-legend span {padding-left: 4px}
.atlas-view-sides {display: flex; justify-content: space-between; font-size: 13px}
.atlas-view-download {font-size: 13px}
`;

export function render(args, call) {
  const {data, parentElement} = args;
  let rec = views.get(parentElement);
  if (!rec) {
    if (!document.getElementById("atlas-view-style")) {
      document.head.append(el("style", {id: "atlas-view-style", textContent: STYLE}));
    }
    const root = el("div", {className: "atlas-view"});
    parentElement.append(root);
    rec = {root, size: -1, state: null};
    views.set(parentElement, rec);
    rec.resized = new ResizeObserver(() => {
      const width = root.clientWidth;
      if (rec.header && width && Math.abs(width - (rec.width || 0)) > 8) { rec.width = width; draw(rec); }
    });
    rec.resized.observe(root);
  }
  rec.call = call;
  const got = decode(data);
  const same = rec.header && got.size === rec.size && JSON.stringify(got.header) === rec.headerText;
  if (same) return;  // a rerun of the page with the same sentence: the view stays as the learner left it
  const asked = rec.header ? rec.header.asked : null;
  rec.header = got.header;
  rec.grid = null;  // new numbers or words: the tiles are built again
  rec.headerText = JSON.stringify(got.header);
  rec.words = got.words;
  rec.size = got.size;
  rec.colour = scaleOf(got.header.colours);
  // the learner's choice while the page asks for the same first view; the page's after a reset or a tour stop
  const wanted = !rec.state ? firstChoice(got.header) : asked === got.header.asked ? rec.state : got.header.initial;
  rec.state = parseChoice(choiceText(wanted), got.header.kinds) || {...got.header.initial};
  rec.width = rec.root.clientWidth;
  remember(rec);
  draw(rec);
}

export function unmount(parentElement, call) {
  const rec = views.get(parentElement);
  if (!rec || rec.call !== call) return;
  views.delete(parentElement);
  rec.resized.disconnect();
  rec.root.remove();
}
