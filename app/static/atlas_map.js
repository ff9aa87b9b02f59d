// A heatmap, or a figure of plain curves, drawn on a canvas of our own for the chart element (app/static/atlas_chart.js
// draws them with this module; app/fast/chart.py's own_map and own_lines say which figures qualify: one heatmap on
// category or numeric axes; app.charts.curves.line_chart's curves on linear axes).
//
// Plotly draws a heatmap again from scratch on every change of its numbers: its whole layout pass, the axes, the
// labels and every number in the cells, so a choice that moves two maps missed its frame budget, and a slider whose
// run redraws maps spent most of its time drawing them (docs/benchmarks.md has the numbers). Here a map is one pass
// over its cells and their labels, from the same figure dict Plotly would get, so it looks as Plotly draws it: the
// theme's fonts and colours, the fitted margins,
// the colour scale (Plotly's rule for zmin, zmax and zmid), the numbers in the cells sized and coloured by Plotly's
// rules, the outlines of marked cells, the title and the axes' titles. Hover shows the trace's hovertemplate; the
// toolbar downloads a PNG at twice the size and opens the map full screen.
//
// What is drawn is also kept on the chart's box for tests and assistive tools (curves: {kind: "lines", title,
// titleText, labels, legend, noteBoxes (each text's box), plot: its size, xrange, yrange, curves: [{name, x, y}],
// notes, vlines: the x of each vertical line}); a map's: div.atlasDrawn = {z, text, x, y,
// zmin, zmax, title (as drawn), titleText (as the figure writes it, Plotly's markup and all), outlined: how many
// cells are outlined, labels: {x, y}: each tick label's text, font size and box in the canvas's CSS pixels}, and the canvas's aria-label says what the map is.

const LINE = 1.3;  // Plotly's line height for multi-line text (its LINE_SPACING)
const ENTITY = {amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'", nbsp: "\u00a0"};

// Plotly's pseudo-HTML (escaped tokens, <b>, <br>, <sup>) as plain lines: entities decoded, other tags dropped.
function lines(text) {
  return String(text == null ? "" : text).split(/<br\s*\/?>/i).map((part) => part.replace(/<[^>]*>/g, "")
    .replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, e) => e[0] !== "#" ? (ENTITY[e.toLowerCase()] ?? m)
      : String.fromCodePoint(e[1] === "x" || e[1] === "X" ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10))));
}

function parseColour(c) {
  if (Array.isArray(c)) return c;
  const s = String(c).trim();
  if (s[0] === "#") {
    const h = s.length === 4 ? [...s.slice(1)].map((x) => x + x).join("") : s.slice(1, 7);
    return [0, 2, 4].map((i) => parseInt(h.slice(i, i + 2), 16));
  }
  const m = s.match(/-?\d+(\.\d+)?/g);
  return m ? m.slice(0, 3).map(Number) : [0, 0, 0];
}

// The trace's colour scale as [[stop, [r, g, b]], ...], reversed where the trace says so.
function scaleOf(trace) {
  const stops = (trace.colorscale || [[0, "#ffffff"], [1, "#000000"]]).map(([s, c]) => [Number(s), parseColour(c)]);
  return trace.reversescale ? stops.map(([s, c]) => [1 - s, c]).reverse() : stops;
}

function colourAt(stops, f) {
  if (!(f >= 0)) f = 0;
  if (f > 1) f = 1;
  let k = 1;
  while (k < stops.length - 1 && stops[k][0] < f) k++;
  const [s0, c0] = stops[k - 1], [s1, c1] = stops[k];
  const u = s1 > s0 ? (f - s0) / (s1 - s0) : 0;
  return [0, 1, 2].map((i) => Math.round(c0[i] + u * (c1[i] - c0[i])));
}

// The colour range as Plotly sets it: zmin and zmax where both are given, else the numbers' own range, made
// symmetric about zmid where there is one.
function range(trace, z) {
  if (trace.zmin != null && trace.zmax != null) return [trace.zmin, trace.zmax];
  let lo = Infinity, hi = -Infinity;
  for (const row of z) for (const v of row) if (Number.isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
  if (!Number.isFinite(lo)) return [0, 1];
  if (trace.zmin != null) lo = trace.zmin;
  if (trace.zmax != null) hi = trace.zmax;
  if (trace.zmid != null) {
    const half = Math.max(Math.abs(lo - trace.zmid), Math.abs(hi - trace.zmid));
    return [trace.zmid - half, trace.zmid + half];
  }
  return [lo, hi];
}

// WCAG contrast of two colours: Plotly writes a cell's number in white where white stands out more than its dark
// grey (#444) does, else in that grey.
function luminance([r, g, b]) {
  const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
}
function contrast(a, b) {
  const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05);
}
const WHITE = [255, 255, 255], GREY = [68, 68, 68];
const inkOn = (rgb) => (contrast(rgb, WHITE) > contrast(rgb, GREY) ? "#ffffff" : "#444444");

// A number as the hovertemplate's d3 format asks (".4g", ".3f"), else as it is.
function formatted(v, spec) {
  if (typeof v !== "number") return v == null ? "" : String(v);
  if (!Number.isFinite(v)) return Number.isNaN(v) ? "NaN" : (v > 0 ? "∞" : "−∞");
  const m = /^\.(\d+)([fg])$/.exec(spec || "");
  const s = !m ? String(Number(v.toPrecision(7))) : m[2] === "f" ? v.toFixed(Number(m[1])) : v.toPrecision(Math.max(1, Number(m[1])));
  return s.replace(/^-/, "−");
}

function hoverText(trace, i, j, z) {
  const template = trace.hovertemplate || "%{y} · %{x}<br>%{z}";
  const value = {x: trace.x ? trace.x[j] : j, y: trace.y ? trace.y[i] : i, z: z[i][j], text: trace.text ? trace.text[i][j] : "",
                 hovertext: trace.hovertext ? trace.hovertext[i][j] : ""};
  return lines(template.replace(/<extra>.*?<\/extra>/g, "").replace(/%\{(\w+)(?::([^}]*))?\}/g,
    (_, name, spec) => formatted(value[name], spec)));
}

// The outline path of marked cells ("M x,y H x V y H x Z ...", in the axes' cell coordinates) as canvas moves.
function tracePath(ctx, path, px, py) {
  let x = 0, y = 0;
  for (const [, cmd, args] of path.matchAll(/([MLHVZ])([^MLHVZ]*)/gi)) {
    const n = args.split(/[\s,]+/).filter(Boolean).map(Number);
    const c = cmd.toUpperCase();
    if (c === "M" || c === "L") { [x, y] = n; c === "M" ? ctx.moveTo(px(x), py(y)) : ctx.lineTo(px(x), py(y)); }
    else if (c === "H") { x = n[0]; ctx.lineTo(px(x), py(y)); }
    else if (c === "V") { y = n[0]; ctx.lineTo(px(x), py(y)); }
    else ctx.closePath();
  }
}

function font(size, family, bold) {
  return `${bold ? "bold " : ""}${size}px ${family}`;
}

// Multi-line text with its first line's middle at y (Plotly's titles and labels grow downwards).
function writeLines(ctx, texts, x, y, size) {
  texts.forEach((t, n) => ctx.fillText(t, x, y + n * size * LINE));
}

// A typed array as Python's Plotly writes it ({dtype: "f8", bdata: base64, shape: "rows, cols"}) as rows of numbers.
const TYPES = {f8: Float64Array, f4: Float32Array, i4: Int32Array, u4: Uint32Array, i2: Int16Array, u2: Uint16Array,
               i1: Int8Array, u1: Uint8Array};
function rowsOf(v) {
  if (!v || Array.isArray(v) || !v.bdata) return v;
  const raw = atob(v.bdata), bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
  const flat = Array.from(new (TYPES[v.dtype] || Float64Array)(bytes.buffer));
  const shape = String(v.shape || flat.length).split(",").map(Number);
  if (shape.length < 2) return flat;
  const out = [];
  for (let r = 0; r < shape[0]; r++) out.push(flat.slice(r * shape[1], (r + 1) * shape[1]));
  return out;
}

// The canvas sized for `width` × `height` CSS pixels at `ratio`, the paper and the plot's backgrounds painted: the
// context, the theme's font family and ink, the margins and the plot's box.
function ground(canvas, layout, tpl, width, height, ratio) {
  const family = (tpl.font && tpl.font.family) || "sans-serif";
  const ink = (tpl.font && tpl.font.color) || "#444";
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.round(height * ratio);
  canvas.style.width = width + "px";
  canvas.style.height = height + "px";
  const ctx = canvas.getContext("2d");
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.fillStyle = tpl.paper_bgcolor || "#ffffff";
  ctx.fillRect(0, 0, width, height);
  const m = Object.assign({l: 80, r: 80, t: 100, b: 80}, layout.margin || {});
  const box = {x: m.l, y: m.t, w: Math.max(1, width - m.l - m.r), h: Math.max(1, height - m.t - m.b)};
  ctx.fillStyle = layout.plot_bgcolor || tpl.plot_bgcolor || "#ffffff";
  ctx.fillRect(box.x, box.y, box.w, box.h);
  return {ctx, family, ink, m, box};
}

// The y axis' title, turned upright, `off` px left of the plot (at least half its size from the figure's edge).
function yAxisTitle(ctx, text, f, family, box, off) {
  ctx.save();
  ctx.fillStyle = f.color;
  ctx.font = font(f.size, family);
  ctx.translate(Math.max(f.size / 2, box.x - off - f.size / 2), box.y + box.h / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  ctx.fillText(text, 0, 0);
  ctx.restore();
}

// Draw the figure {data: [heatmap], layout} onto `canvas`, `width` × `height` CSS pixels at `ratio` device pixels
// each. Returns the geometry hover needs.
export function paint(canvas, fig, width, height, ratio) {
  const trace = fig.data[0], layout = fig.layout, tpl = (layout.template && layout.template.layout) || {};
  const {ctx, family, ink, m, box} = ground(canvas, layout, tpl, width, height, ratio);
  // what shows through a cell with no colour: the plot's background, or the paper's where the plot's is see-through
  // (the canvas gives any CSS colour back as #rrggbb, or rgba() with its alpha last)
  const seen = ctx.fillStyle, alpha = seen.startsWith("rgba") ? Number(seen.match(/[\d.]+/g)[3]) : 1;
  const behind = parseColour(alpha > 0.5 ? seen : tpl.paper_bgcolor || "#ffffff");

  const z = trace.z, rows = z.length, cols = rows ? z[0].length : 0;
  const yDown = !!(layout.yaxis && layout.yaxis.autorange === "reversed");
  const numeric = !!fig.numeric;
  const cw = box.w / Math.max(1, cols), ch = box.h / Math.max(1, rows);
  const cellX = (j) => box.x + j * cw, cellY = (i) => box.y + (yDown ? i : rows - 1 - i) * ch;
  // numeric axes: each axis' range in data units and the pixel of a value (rows grow downwards where reversed)
  const xr = numeric ? spanOf(trace.x, cols, (layout.xaxis || {}).range) : null;
  const yr = numeric ? spanOf(trace.y, rows, null) : null;
  const px = numeric ? (v) => box.x + (v - xr[0]) / (xr[1] - xr[0]) * box.w : null;
  const py = numeric ? (v) => box.y + (yDown ? v - yr[0] : yr[1] - v) / (yr[1] - yr[0]) * box.h : null;
  const yTicks = numeric ? autoTicks(yr[0], yr[1], box.h, true) : null;
  const xTicks = numeric ? autoTicks(xr[0], xr[1], box.w, false) : null;
  // the row grid lines (shown where a cell has no colour: a masked score, or a numeric axis' range past the
  // numbers), unless the figure or theme turns them off
  const yGrid = Object.assign({showgrid: true, gridcolor: "#eee"}, tpl.yaxis || {}, layout.yaxis || {});
  if (yGrid.showgrid !== false) {
    ctx.fillStyle = yGrid.gridcolor;
    if (numeric) for (const v of yTicks.values) ctx.fillRect(box.x, Math.round(py(v)) - 0.5, box.w, 1);
    else for (let i = 0; i < rows; i++) ctx.fillRect(box.x, Math.round(cellY(i) + ch / 2) - 0.5, box.w, 1);
  }
  const stops = scaleOf(trace), [lo, hi] = range(trace, z), span = hi - lo || 1;
  const gx = trace.xgap || 0, gy = trace.ygap || 0;
  const colours = [];
  if (numeric) numericCells(ctx, z, trace, stops, lo, span, px, py, box);
  for (let i = 0; i < (numeric ? 0 : rows); i++) {
    colours.push([]);
    for (let j = 0; j < cols; j++) {
      const v = z[i][j];
      if (v == null || !Number.isFinite(v)) { colours[i].push(null); continue; }  // no colour: the plot shows through
      const rgb = colourAt(stops, (v - lo) / span);
      colours[i].push(rgb);
      ctx.fillStyle = `rgb(${rgb[0]},${rgb[1]},${rgb[2]})`;
      // whole pixels, as Plotly's heatmap image has them: crisp gaps between the cells
      const x0 = Math.round(cellX(j) + gx / 2), x1 = Math.round(cellX(j) + cw - gx / 2);
      const y0 = Math.round(cellY(i) + gy / 2), y1 = Math.round(cellY(i) + ch - gy / 2);
      ctx.fillRect(x0, y0, x1 - x0, y1 - y0);
    }
  }

  // the numbers in the cells, sized as Plotly sizes them: the largest font (at most the layout's) whose widest text
  // fits a cell, a character taken as 0.65 of the size
  const base = (tpl.font && tpl.font.size) || 12;
  if (trace.texttemplate && trace.text) {
    let chars = 1;
    for (const row of trace.text) for (const t of row) chars = Math.max(chars, String(t).length);
    const size = Math.min(Math.floor((cw - gx) / chars / (LINE / 2)), Math.floor((ch - gy) / LINE), base);
    if (size > 0) {
      ctx.font = font(size, family);
      ctx.textAlign = "center";
      ctx.textBaseline = "alphabetic";  // Plotly's baseline: 0.35 of the size below the cell's middle
      for (let i = 0; i < rows; i++) {
        for (let j = 0; j < cols; j++) {
          const t = trace.text[i][j];
          if (t === "" || t == null) continue;
          ctx.fillStyle = inkOn(colours[i][j] || behind);  // a cell with no colour: against the plot's background
          ctx.fillText(String(t), cellX(j) + cw / 2, cellY(i) + ch / 2 + 0.35 * size);
        }
      }
    }
  }

  ctx.save();  // the marked cells' outlines, clipped to the plot as Plotly clips shapes placed on the axes
  ctx.beginPath();
  ctx.rect(box.x, box.y, box.w, box.h);
  ctx.clip();
  for (const shape of layout.shapes || []) {
    if (numeric && shape.type === "line") { vline(ctx, shape, px(shape.x0), box); continue; }
    if (shape.type !== "path" || !shape.path) continue;
    ctx.beginPath();
    tracePath(ctx, shape.path, (x) => box.x + (x + 0.5) * cw, (y) => box.y + (yDown ? y + 0.5 : rows - 0.5 - y) * ch);
    ctx.strokeStyle = (shape.line && shape.line.color) || "#444";
    ctx.lineWidth = (shape.line && shape.line.width) || 2;
    ctx.stroke();
  }
  ctx.restore();

  // tick labels: the keys along the top (or bottom) edge, the queries at the left, every one (category axes)
  const ax = layout.xaxis || {}, ay = layout.yaxis || {};
  const tick = (a, t) => Object.assign({size: 12, color: ink}, (t.tickfont || {}), (a.tickfont || {}));
  const xt = tick(ax, tpl.xaxis || {}), yt = tick(ay, tpl.yaxis || {});
  const top = ax.side === "top", upright = ax.tickangle === -90 || ax.tickangle === 270;
  const xLabels = numeric ? xTicks.labels : (ax.ticktext || trace.x).map((t) => lines(t).join(" "));
  const yLabels = numeric ? yTicks.labels : (ay.ticktext || trace.y).map((t) => lines(t).join(" "));
  const xAt = numeric ? (j) => px(xTicks.values[j]) : (j) => box.x + (j + 0.5) * cw;
  const yAt = numeric ? (i) => py(yTicks.values[i]) : (i) => cellY(i) + ch / 2;
  // Plotly keeps the theme's margin pad (8 px) between the plot and its axes, then its tick marks (5 px, in the
  // theme's faint tick colour), then the labels: measured against Plotly's own drawing
  // (a numeric axis' labels sit 3 px further below the plot: measured likewise)
  const gap = (tpl.margin || {}).pad ?? 0, TICK = 5, PAD = gap + TICK + 3, XPAD = PAD + (numeric && !top ? 3 : 0);
  ctx.fillStyle = (tpl.xaxis || {}).tickcolor || "#eee";
  for (let j = 0; j < xLabels.length; j++) ctx.fillRect(Math.round(xAt(j)) - 0.5, top ? box.y - gap - TICK : box.y + box.h + gap, 1, TICK);
  ctx.fillStyle = (tpl.yaxis || {}).tickcolor || "#eee";
  for (let i = 0; i < yLabels.length; i++) ctx.fillRect(box.x - gap - TICK, Math.round(yAt(i)) - 0.5, TICK, 1);
  ctx.fillStyle = xt.color;
  ctx.font = font(xt.size, family);
  let xDepth = 0;
  const labelBoxes = {x: [], y: []};  // where each label's ink is (tests read that no two overlap)
  xLabels.forEach((t, j) => {
    const x = xAt(j), by = top ? box.y - XPAD : box.y + box.h + XPAD;
    ctx.textBaseline = upright ? "middle" : (top ? "bottom" : "top");
    const mt = ctx.measureText(t), up = mt.actualBoundingBoxAscent, down = mt.actualBoundingBoxDescent;
    xDepth = Math.max(xDepth, upright ? mt.width : xt.size);
    labelBoxes.x.push(upright ? {text: t, size: xt.size, x0: x - up, x1: x + down, y0: top ? by - mt.width : by, y1: top ? by : by + mt.width}
                              : {text: t, size: xt.size, x0: x - mt.width / 2, x1: x + mt.width / 2, y0: by - up, y1: by + down});
    if (upright) {
      ctx.save();
      ctx.translate(x, top ? box.y - XPAD : box.y + box.h + XPAD);
      ctx.rotate(-Math.PI / 2);
      ctx.textAlign = top ? "left" : "right";
      ctx.textBaseline = "middle";
      ctx.fillText(t, 0, 0);
      ctx.restore();
    } else {
      ctx.textAlign = "center";
      ctx.textBaseline = top ? "bottom" : "top";
      ctx.fillText(t, x, top ? box.y - XPAD : box.y + box.h + XPAD);
    }
  });
  ctx.fillStyle = yt.color;
  ctx.font = font(yt.size, family);
  ctx.textAlign = "right";
  // a numeric axis' labels: Plotly's baseline, 0.35 of the size below the tick (measured against its drawing)
  ctx.textBaseline = numeric ? "alphabetic" : "middle";
  let yDepth = 0;
  yLabels.forEach((t, i) => {
    const yc = yAt(i) + (numeric ? 0.35 * yt.size : 0), mt = ctx.measureText(t);
    yDepth = Math.max(yDepth, mt.width);
    labelBoxes.y.push({text: t, size: yt.size, x0: box.x - PAD - mt.width, x1: box.x - PAD,
                       y0: yc - mt.actualBoundingBoxAscent, y1: yc + mt.actualBoundingBoxDescent});
    ctx.fillText(t, box.x - PAD, yc);
  });

  // the axes' titles, the theme's standoff beyond their labels (less a few px, measured against Plotly's drawing),
  // and the figure's title
  const titleFont = (a, t) => Object.assign({size: 14, color: ink}, ((t.title || {}).font || {}), (((a.title || {}).font) || {}));
  const xTitle = lines(((ax.title || {}).text) || "").join(" "), yTitle = lines(((ay.title || {}).text) || "").join(" ");
  if (xTitle) {
    const f = titleFont(ax, tpl.xaxis || {});
    const off = PAD + xDepth + (((tpl.xaxis || {}).title || {}).standoff ?? 10) - (upright ? 7 : 4);
    ctx.fillStyle = f.color;
    ctx.font = font(f.size, family);
    ctx.textAlign = "center";
    ctx.textBaseline = top ? "bottom" : "top";
    ctx.fillText(xTitle, box.x + box.w / 2, top ? box.y - off : box.y + box.h + off);
  }
  if (yTitle) yAxisTitle(ctx, yTitle, titleFont(ay, tpl.yaxis || {}), family, box,
                         PAD + yDepth + (((tpl.yaxis || {}).title || {}).standoff ?? 10) - 7);
  const titleLines = writeTitle(ctx, layout, tpl, width, height, m, family, ink);

  // the colour bar beside a map whose numbers are not written in its cells
  if (trace.showscale !== false) colourBar(ctx, trace, stops, lo, hi, box, family, ink);
  return {box, rows, cols, cw, ch, yDown, title: titleLines.join(" "), labels: labelBoxes, zmin: lo, zmax: hi,
          numeric, xr, yr};
}

// A numeric axis' cells: each number's cell reaches halfway to its neighbours (Plotly's heatmap bricks), and the
// range is the cells' outer edges unless the figure gives one. values: the axis' numbers (evenly spaced), or none
// (0, 1, 2 …).
function spanOf(values, n, given) {
  if (Array.isArray(given) && given.length === 2) return given.map(Number);
  const v = values && values.length === n ? Array.from(values, Number) : Array.from({length: n}, (_, k) => k);
  const step = n > 1 ? (v[n - 1] - v[0]) / (n - 1) : 1;
  return [v[0] - step / 2, v[n - 1] + step / 2];
}
function edgesOf(values, n) {
  const v = values && values.length === n ? Array.from(values, Number) : Array.from({length: n}, (_, k) => k);
  const step = n > 1 ? (v[n - 1] - v[0]) / (n - 1) : 1;
  return {first: v[0] - step / 2, step};
}

// Plotly's automatic ticks on a linear axis `length` px long: about one per 80 px across (40 px up), between 5 and
// 10, the step the next of 2, 5 or 10 times a power of ten above the rough one, starting from 0; and its labels:
// two digits past the step's largest, trailing zeros dropped, a thousands prefix (k, M) past four digits, a true
// minus sign.
const SI = ["f", "p", "n", "μ", "m", "", "k", "M", "G", "T"];
export function autoTicks(a, b, length, vertical) {
  const lo = Math.min(a, b), hi = Math.max(a, b);
  const nt = Math.min(9, Math.max(4, length / (vertical ? 40 : 80))) + 1;
  const rough = (hi - lo) / nt;
  if (!(rough > 0)) return {values: [], labels: []};
  const base = 10 ** Math.floor(Math.log10(rough)), r = rough / base;
  const dtick = base * ([2, 5, 10].find((f) => f > r) ?? 10);
  const round = 2 - Math.floor(Math.log10(dtick) + 0.01);
  const top = Math.max(Math.abs(lo), Math.abs(hi)), rangeExp = Math.floor(Math.log10(top) + 0.01);
  const exponent = Math.abs(rangeExp) > 3 ? 3 * Math.round((rangeExp - 1) / 3) : 0;
  const values = [], labels = [];
  for (let k = Math.ceil(lo / dtick - 1e-9); k * dtick <= hi + dtick * 1e-9; k++) {
    const v = Number((k * dtick).toPrecision(12));
    values.push(v);
    labels.push(numberLabel(v, round, exponent));
  }
  return {values, labels};
}
function numberLabel(v, round, exponent) {
  const e = 10 ** -round / 2;
  let x = Math.abs(v), neg = v < 0, s;
  if (x < e) { s = "0"; neg = false; }
  else {
    x += e;
    if (exponent) { x *= 10 ** -exponent; round += exponent; }
    if (round === 0) s = String(Math.floor(x));
    else if (round < 0) {  // whole tens, hundreds …: rounded, then the last digits written as zeros
      s = String(Math.round(x));
      s = s.slice(0, s.length + round) + "0".repeat(-round);
    }
    else { s = String(x); const dp = s.indexOf(".") + 1; if (dp) s = s.slice(0, dp + round).replace(/\.?0+$/, ""); }
    if (s.replace(/\..*/, "").length > 4) s = s.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
    if (exponent) s += SI[exponent / 3 + 5] ?? `e${exponent}`;
  }
  return (neg ? "\u2212" : "") + s;
}

// A large numeric map's cells as one image, one pixel a cell, scaled onto the plot without smoothing (as Plotly
// draws a heatmap with many cells): each screen pixel shows the cell under it.
function numericCells(ctx, z, trace, stops, lo, span, px, py, box) {
  const rows = z.length, cols = rows ? z[0].length : 0;
  if (!rows || !cols) return;
  const img = new ImageData(cols, rows);
  for (let i = 0; i < rows; i++) {
    for (let j = 0; j < cols; j++) {
      const v = z[i][j], o = 4 * (i * cols + j);
      if (v == null || !Number.isFinite(v)) continue;  // no colour: the plot shows through
      const rgb = colourAt(stops, (v - lo) / span);
      img.data[o] = rgb[0]; img.data[o + 1] = rgb[1]; img.data[o + 2] = rgb[2]; img.data[o + 3] = 255;
    }
  }
  const tile = document.createElement("canvas");
  tile.width = cols;
  tile.height = rows;
  tile.getContext("2d").putImageData(img, 0, 0);
  const ex = edgesOf(trace.x, cols), ey = edgesOf(trace.y, rows);
  const x0 = px(ex.first), x1 = px(ex.first + ex.step * cols);
  const y0 = py(ey.first), y1 = py(ey.first + ey.step * rows);
  ctx.save();
  ctx.beginPath();
  ctx.rect(box.x, box.y, box.w, box.h);
  ctx.clip();
  ctx.imageSmoothingEnabled = false;
  // rows run from the first y at the top where y grows downwards, else from the bottom
  if (y0 <= y1) ctx.drawImage(tile, Math.round(x0), Math.round(y0), Math.round(x1) - Math.round(x0), Math.round(y1) - Math.round(y0));
  else {
    ctx.translate(0, Math.round(y0) + Math.round(y1));
    ctx.scale(1, -1);
    ctx.drawImage(tile, Math.round(x0), Math.round(y1), Math.round(x1) - Math.round(x0), Math.round(y0) - Math.round(y1));
  }
  ctx.restore();
}

// A vertical line over the plot's height at pixel x (what add_vline draws: xref x, yref "y domain"), dashed as Plotly
// dashes a line: dash and gap each three times the width, at least 9 px.
function vline(ctx, shape, x, box) {
  const line = shape.line || {}, width = line.width ?? 2, unit = Math.max(width, 3);
  const dash = {dash: [3 * unit, 3 * unit], dot: [unit, unit], longdash: [5 * unit, 5 * unit]}[line.dash] || [];
  ctx.save();
  ctx.beginPath();
  ctx.rect(box.x, box.y, box.w, box.h);
  ctx.clip();
  ctx.strokeStyle = line.color || "#444";
  ctx.lineWidth = width;
  ctx.setLineDash(dash);
  ctx.beginPath();
  ctx.moveTo(x, box.y + box.h * (1 - (shape.y0 ?? 0)));
  ctx.lineTo(x, box.y + box.h * (1 - (shape.y1 ?? 1)));
  ctx.stroke();
  ctx.restore();
}

// The figure's title where Plotly writes it; returns its lines.
function writeTitle(ctx, layout, tpl, width, height, m, family, ink) {
  const title = layout.title || {}, titleLines = lines(title.text || "");
  if (title.text) {
    const tt = Object.assign({size: 16, color: ink}, (tpl.title || {}).font || {}, title.font || {});
    const pad = Object.assign({t: 0, l: 0}, (tpl.title || {}).pad || {}, title.pad || {});
    ctx.fillStyle = tt.color;
    ctx.font = font(tt.size, family, /<b>/i.test(title.text));
    ctx.textAlign = "left";
    ctx.textBaseline = "middle";
    const x = ((title.x ?? (tpl.title || {}).x) || 0) * width + pad.l;
    // anchored at the top, Plotly's title moves up by 0.7 of its size for each line after its first (measured)
    const y = title.yanchor === "top" ? (1 - (title.y ?? 1)) * height + pad.t + tt.size * 0.43 - (titleLines.length - 1) * tt.size * 0.71
      : Math.max(tt.size * 0.65, m.t / 2 - (titleLines.length - 1) * tt.size * LINE / 2);
    writeLines(ctx, titleLines, x, y, tt.size);
  }
  return titleLines;
}

// The ticks Plotly puts on a vertical axis `length` px long: about one per 40 px, between 5 and 10 of them, the step
// rounded up to 2, 5 or 10 times a power of ten; and their labels without trailing zeros.
function niceTicks(lo, hi, length) {
  const span = hi - lo;
  if (!(span > 0)) return {ticks: [lo], decimals: 0};
  const rough = span / (Math.min(9, Math.max(4, length / 40)) + 1), base = 10 ** Math.floor(Math.log10(rough));
  const step = base * [2, 5, 10].find((f) => f >= rough / base - 1e-9);
  const ticks = [];
  for (let v = Math.ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) ticks.push(Number(v.toPrecision(12)));
  return {ticks, decimals: Math.max(0, -Math.floor(Math.log10(step) + 1e-9))};
}

// The colour bar as Plotly draws a trace's by default: at 1.02 of the plot's width, 10 px in (xpad), the plot's
// height less 10 px at each end (ypad), `thickness` px wide (30 unless the trace says), a 1 px outline, and its
// tick labels to the right.
function colourBar(ctx, trace, stops, lo, hi, box, family, ink) {
  const bar = trace.colorbar || {};
  const thick = bar.thickness ?? 30, xpad = bar.xpad ?? 10, ypad = bar.ypad ?? 10;
  const x = box.x + (bar.x ?? 1.02) * box.w + xpad, y0 = box.y + ypad, len = Math.max(1, box.h - 2 * ypad);
  const grad = ctx.createLinearGradient(0, y0 + len, 0, y0);
  for (const [s, c] of stops) grad.addColorStop(Math.min(1, Math.max(0, s)), `rgb(${c[0]},${c[1]},${c[2]})`);
  ctx.fillStyle = grad;
  ctx.fillRect(x, y0, thick, len);
  ctx.strokeStyle = bar.outlinecolor || "#444";
  ctx.lineWidth = bar.outlinewidth ?? 1;
  if (ctx.lineWidth > 0) ctx.strokeRect(x + 0.5, y0 + 0.5, thick - 1, len - 1);
  const tf = Object.assign({size: 12, color: ink}, bar.tickfont || {});
  ctx.fillStyle = tf.color;
  ctx.font = font(tf.size, family);
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  const {ticks, decimals} = niceTicks(lo, hi, len);
  for (const v of ticks) {
    ctx.fillText(String(Number(v.toFixed(decimals))).replace(/^-/, "−"), x + thick + 3, y0 + len * (1 - (v - lo) / ((hi - lo) || 1)));
  }
}

// ------------------------------------------------------------------------- curves (app.charts.curves.line_chart)

// Plotly's autorange for one axis: every value keeps its pads clear of the plot's edges (`lo` px below or left of
// it, `hi` px above or right: markers their radius, a padded axis 5% of its length more, a point's label its box);
// the range is the one that fits the tightest pair of extremes.
function autorange(points, length) {
  if (!points.length) return [0, 1];
  let best = null, m = 0;
  for (const a of points) {
    for (const b of points) {
      const dv = b.v - a.v, dl = length - a.lo - b.hi;
      if (dv > 0 && dl > 0 && dv / dl > m) { m = dv / dl; best = [a, b]; }
    }
  }
  if (!best) {  // one value: Plotly widens it by one either way (by 1% of it where it is large)
    const v = points[0].v, d = Math.abs(v) > 100 ? Math.abs(v) / 100 : 1;
    return [v - d, v + d];
  }
  return [best[0].v - m * best[0].lo, best[1].v + m * best[1].hi];
}

// Only the extremes matter to autorange: the least and the greatest value of each kind of pad.
function extremes(values, pad, out) {
  let lo = Infinity, hi = -Infinity;
  for (const v of values) if (Number.isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
  if (Number.isFinite(lo)) out.push({v: lo, lo: pad, hi: pad}, {v: hi, lo: pad, hi: pad});
}

// A point's label (an annotation with a line to its point): its box, text and a border of 2 px each way, `ay` px
// above the point; Plotly keeps that box (and the arrow's 3 px head room) inside the plot.
const NOTE_BORDER = 2;
function noteBox(ctx, note, size, family) {
  ctx.font = font(size, family);
  const w = ctx.measureText(lines(note.text).join(" ")).width + 2 * NOTE_BORDER;
  return {w, h: Math.round(size * LINE + 2 * NOTE_BORDER)};
}

function linearTicks(lo, hi, length, vertical, dtick) {
  if (!dtick) return autoTicks(lo, hi, length, vertical);
  const values = [], labels = [];
  for (let k = Math.ceil(lo / dtick - 1e-9); k * dtick <= hi + 1e-9; k++) {
    values.push(k * dtick);
    labels.push(numberLabel(k * dtick, 2 - Math.floor(Math.log10(dtick) + 0.01), 0));
  }
  return {values, labels};
}

// Where a value sits on an axis: its log10 on a log axis (a value not above 0 has no place: a gap), else itself.
function toAxis(a) {
  return a.type === "log" ? (v) => (v > 0 ? Math.log10(v) : NaN) : (v) => v;
}

// An axis's ticks, as Plotly places and writes them (values in the axis' units): the values given (tickvals,
// named by ticktext); on a log axis every dtick-th power of ten, written as a power ("1", "10", then 10 with the
// exponent raised) 1.25 times the size, and with dtick "D1" or "D2" the digits between (2 … 9, or 2 and 5) at
// 0.75 times the size; on a linear axis linearTicks'. Each label: its text, its raised part and its size's scale.
const MANTISSAS = {D1: [1, 2, 3, 4, 5, 6, 7, 8, 9], D2: [1, 2, 5]};
function axisTicks(a, lo, hi, length, vertical) {
  const out = {values: [], labels: [], sups: [], scales: []};
  const put = (v, text, sup = "", scale = 1) => {
    if (v < lo - 1e-9 || v > hi + 1e-9) return;
    out.values.push(v); out.labels.push(text); out.sups.push(sup); out.scales.push(scale);
  };
  if (Array.isArray(a.tickvals)) {
    const f = toAxis(a);
    a.tickvals.forEach((t, k) => put(f(Number(t)), lines((a.ticktext || [])[k] ?? t).join(" ")));
    return out;
  }
  if (a.type !== "log") {
    const t = linearTicks(lo, hi, length, vertical, a.dtick);
    t.values.forEach((v, k) => put(v, t.labels[k]));
    return out;
  }
  const power = (p) => put(p, p === 0 ? "1" : "10", p === 0 || p === 1 ? "" : (p < 0 ? "\u2212" : "") + Math.abs(p), 1.25);
  const digits = MANTISSAS[a.dtick];
  if (digits) {
    for (let d = Math.floor(lo); d <= Math.ceil(hi); d++) {
      for (const m of digits) m === 1 ? power(d) : put(d + Math.log10(m), String(m), "", 0.75);
    }
  } else {
    const step = Math.max(1, Math.round(Number(a.dtick) || 1));
    for (let k = Math.ceil(lo / step - 1e-9); k * step <= hi + 1e-9; k++) power(k * step);
  }
  return out;
}

// A tick label with its raised part (Plotly's <sup>: 70% of the size, its baseline 0.42 of the size up), its left
// edge at x and y on the context's text baseline ("top": the em square's top, which a smaller font has lower);
// returns its width. measure: the width alone, nothing drawn.
function tickLabel(ctx, text, sup, size, family, x, y, measure) {
  ctx.font = font(size, family);
  const wb = ctx.measureText(text).width;
  if (!measure) ctx.fillText(text, x, y);
  if (!sup) return wb;
  const top = ctx.textBaseline === "top" ? 0.3 * emAscent(ctx, size, family) : 0;
  ctx.font = font(size * 0.7, family);
  const ws = ctx.measureText(sup).width;
  if (!measure) ctx.fillText(sup, x + wb, y + top - 0.42 * size);
  return wb + ws;
}

// From the alphabetic baseline up to the em square's top, in the family's font of `size` px (left as the context's font).
function emAscent(ctx, size, family) {
  const baseline = ctx.textBaseline;
  ctx.font = font(size, family);
  ctx.textBaseline = "alphabetic";
  const up = ctx.measureText("1").emHeightAscent;
  ctx.textBaseline = baseline;
  return Number.isFinite(up) ? up : 0.8 * size;
}

const DASHES = {dash: 3, dot: 1, longdash: 5};
function dashOf(line) {
  const unit = Math.max(line.width ?? 2, 3), k = DASHES[line.dash];
  return k ? [k * unit, k * unit] : [];
}

// Plotly's star (its symbol path at radius r) and circle.
function marker(ctx, symbol, x, y, r) {
  ctx.beginPath();
  if (symbol === "star") {
    const rs = r * 1.4, x1 = rs * 0.225, x2 = rs * 0.951, x3 = rs * 0.363, x4 = rs * 0.588;
    const y0 = -rs, y1 = rs * -0.309, y2 = rs * 0.382, y3 = rs * 0.118, y4 = rs * 0.809;
    const pts = [[x1, y1], [x2, y1], [x3, y3], [x4, y4], [0, y2], [-x4, y4], [-x3, y3], [-x2, y1], [-x1, y1], [0, y0]];
    pts.forEach(([a, b], n) => (n ? ctx.lineTo(x + a, y + b) : ctx.moveTo(x + a, y + b)));
    ctx.closePath();
  } else ctx.arc(x, y, r, 0, 2 * Math.PI);
  ctx.fill();
}

// Draw a figure of curves ({data: scatter traces, layout}) as Plotly draws app.charts.curves.line_chart's: its
// linear axes (Plotly's ranges and ticks), the curves and their markers, the labels of marked points with
// their lines, the legend under the plot, the titles. Returns the geometry hover needs.
export function paintLines(canvas, fig, width, height, ratio) {
  const layout = fig.layout, tpl = (layout.template && layout.template.layout) || {};
  const {ctx, family, ink, m, box} = ground(canvas, layout, tpl, width, height, ratio);

  const ax = layout.xaxis || {}, ay = layout.yaxis || {};
  const colourway = tpl.colorway || ["#636efa"];
  const fx = toAxis(ax), fy = toAxis(ay);
  const traces = fig.data.map((t, n) => {
    const mode = t.mode || "lines", lineOn = mode.includes("lines"), dotsOn = mode.includes("markers");
    const line = t.line || {}, mk = t.marker || {};
    const colour = line.color || colourway[n % colourway.length];
    const x = Array.from(t.x || [], Number), y = Array.from(t.y || [], (v) => (v == null ? NaN : Number(v)));
    // u, w: where each point sits on the axes (log10 of its value on a log axis)
    return {t, x, y, u: x.map(fx), w: y.map(fy), lineOn, dotsOn, colour, width: line.width ?? 2, dash: dashOf(line),
            mcolour: mk.color || colour, msize: mk.size ?? 6, symbol: mk.symbol || "circle"};
  });
  // the ranges: lines alone leave x tight; markers keep their radius clear; y is padded
  const xs = [], ys = [];
  for (const tr of traces) {
    const r = tr.dotsOn ? tr.msize / 2 : 0;
    extremes(tr.u, tr.dotsOn ? r + 0.05 * box.w : 0, xs);
    extremes(tr.w, r + 0.05 * box.h, ys);
  }
  // add_vline's lines count in x's range as Plotly counts a shape: their x, half their width clear
  for (const shape of layout.shapes || []) {
    const half = ((shape.line || {}).width ?? 2) / 2;
    xs.push({v: fx(Number(shape.x0)), lo: half, hi: half});  // a shape's x is data, an annotation's log10 on a log axis
  }
  const noteSize = (tpl.font && tpl.font.size) || 12;
  const notes = (layout.annotations || []).map((note) => Object.assign({note}, noteBox(ctx, note, noteSize, family)));
  // a text without its line (an annotation with showarrow false) keeps its box clear on x's side it reaches to
  const SIDE = {left: [0, 1], center: [0.5, 0.5], right: [1, 0]};
  for (const {note, w} of notes) {
    if (note.showarrow !== false) continue;
    const [lo, hi] = SIDE[note.xanchor] || SIDE.center;
    xs.push({v: Number(note.x), lo: lo * w, hi: hi * w});
  }
  for (const {note, w, h} of notes) {
    if (note.showarrow === false) continue;
    const lift = -(note.ay ?? -30), head = 3 * (note.arrowwidth ?? 1);
    xs.push({v: Number(note.x), lo: Math.max(w / 2, head), hi: Math.max(w / 2, head)});
    ys.push({v: Number(note.y), lo: Math.max(h / 2 - lift, head), hi: Math.max(h / 2 + lift, head)});
  }
  const given = (a) => (Array.isArray(a.range) && a.range.length === 2 && a.autorange !== true ? a.range.map(Number) : null);
  const xr = given(ax) || autorange(xs, box.w), yr = given(ay) || autorange(ys, box.h);
  const px = (v) => box.x + (v - xr[0]) / (xr[1] - xr[0] || 1) * box.w;
  const py = (v) => box.y + box.h - (v - yr[0]) / (yr[1] - yr[0] || 1) * box.h;
  const xTicks = axisTicks(ax, xr[0], xr[1], box.w, false);
  const yTicks = axisTicks(ay, yr[0], yr[1], box.h, true);

  // grid lines (the theme's: across for y), the zero line where y = 0 is in the range
  const yg = Object.assign({showgrid: true, gridcolor: "#eee"}, tpl.yaxis || {}, ay);
  const xg = Object.assign({showgrid: true, gridcolor: "#eee"}, tpl.xaxis || {}, ax);
  ctx.fillStyle = yg.gridcolor;
  if (yg.showgrid !== false) for (const v of yTicks.values) ctx.fillRect(box.x, Math.round(py(v)) - 0.5, box.w, 1);
  ctx.fillStyle = xg.gridcolor;
  if (xg.showgrid !== false) for (const v of xTicks.values) ctx.fillRect(Math.round(px(v)) - 0.5, box.y, 1, box.h);

  ctx.save();
  ctx.beginPath();
  ctx.rect(box.x, box.y, box.w, box.h);
  ctx.clip();
  for (const tr of traces) {
    if (!tr.lineOn) continue;
    ctx.strokeStyle = tr.colour;
    ctx.lineWidth = tr.width;
    ctx.setLineDash(tr.dash);
    ctx.lineJoin = "round";
    ctx.beginPath();
    let on = false;
    for (let k = 0; k < tr.u.length; k++) {
      const a = tr.u[k], b = tr.w[k];
      if (!Number.isFinite(a) || !Number.isFinite(b)) { on = false; continue; }  // a gap in the curve
      on ? ctx.lineTo(px(a), py(b)) : ctx.moveTo(px(a), py(b));
      on = true;
    }
    ctx.stroke();
  }
  ctx.setLineDash([]);
  ctx.restore();
  for (const tr of traces) {
    if (!tr.dotsOn) continue;
    ctx.fillStyle = tr.mcolour;
    for (let k = 0; k < tr.u.length; k++) {
      if (Number.isFinite(tr.u[k]) && Number.isFinite(tr.w[k])) marker(ctx, tr.symbol, px(tr.u[k]), py(tr.w[k]), tr.msize / 2);
    }
  }
  for (const shape of layout.shapes || []) vline(ctx, shape, px(fx(Number(shape.x0))), box);  // above the curves, as Plotly layers shapes

  // tick labels, tick marks, the axes' titles
  const tick = (a, t) => Object.assign({size: 12, color: ink}, (t.tickfont || {}), (a.tickfont || {}));
  const xt = tick(ax, tpl.xaxis || {}), yt = tick(ay, tpl.yaxis || {});
  // no tick marks on these axes: the labels keep the theme's margin pad and a few px (measured against Plotly's
  // drawing)
  const gap = (tpl.margin || {}).pad ?? 0, PAD = gap + 1, XPAD = gap + 4;
  const labelBoxes = {x: [], y: []};
  // each label is drawn from its left edge: a raised exponent follows its base
  ctx.fillStyle = xt.color;
  ctx.textBaseline = "top";
  ctx.textAlign = "left";
  let xHeight = xt.size;
  xTicks.values.forEach((v, j) => {
    const text = xTicks.labels[j], sup = xTicks.sups[j], size = xt.size * xTicks.scales[j];
    const w = tickLabel(ctx, text, sup, size, family, 0, 0, true);
    // Plotly's baseline is 0.7 of the size below the labels' line: a larger label's top moves by the difference
    const y = box.y + box.h + XPAD + (0.7 - emAscent(ctx, size, family) / size) * (size - xt.size);
    tickLabel(ctx, text, sup, size, family, px(v) - w / 2, y, false);
    xHeight = Math.max(xHeight, size);
    labelBoxes.x.push({text: text + sup, size, x0: px(v) - w / 2, x1: px(v) + w / 2, y0: y, y1: y + size});
  });
  ctx.fillStyle = yt.color;
  ctx.textBaseline = "alphabetic";
  let yDepth = 0;
  yTicks.values.forEach((v, i) => {
    const text = yTicks.labels[i], sup = yTicks.sups[i], size = yt.size * yTicks.scales[i], y = py(v) + 0.35 * size;
    const w = tickLabel(ctx, text, sup, size, family, 0, 0, true);
    tickLabel(ctx, text, sup, size, family, box.x - PAD - w, y, false);
    yDepth = Math.max(yDepth, w);
    labelBoxes.y.push({text: text + sup, size, x0: box.x - PAD - w, x1: box.x - PAD, y0: y - size * 0.7, y1: y + size * 0.2});
  });
  const titleFont = (a, t) => Object.assign({size: 14, color: ink}, ((t.title || {}).font || {}), (((a.title || {}).font) || {}));
  const xTitle = lines(((ax.title || {}).text) || "").join(" "), yTitle = lines(((ay.title || {}).text) || "").join(" ");
  if (xTitle) {
    const f = titleFont(ax, tpl.xaxis || {});
    ctx.fillStyle = f.color;
    ctx.font = font(f.size, family);
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    ctx.fillText(xTitle, box.x + box.w / 2, box.y + box.h + XPAD + xHeight + (((tpl.xaxis || {}).title || {}).standoff ?? 10) - 8);
  }
  if (yTitle) yAxisTitle(ctx, yTitle, titleFont(ay, tpl.yaxis || {}), family, box,
                         PAD + yDepth + (((tpl.yaxis || {}).title || {}).standoff ?? 10) - 7);

  // the texts with no line: each box (the text and 2 px each way) at its anchor, x on the axis and y a share of
  // the plot's height
  const noteBoxes = [];
  for (const {note, w, h} of notes) {
    if (note.showarrow !== false) continue;
    const x = px(Number(note.x)) - w * (SIDE[note.xanchor] || SIDE.center)[0], text = lines(note.text).join(" ");
    const y = box.y + box.h * (1 - Number(note.y)), cy = y + h * ({top: 0.5, bottom: -0.5}[note.yanchor] ?? 0);
    ctx.font = font(noteSize, family);
    ctx.fillStyle = ink;
    ctx.textAlign = "left";
    ctx.textBaseline = "middle";
    ctx.fillText(text, x + NOTE_BORDER, cy);
    noteBoxes.push({text, size: noteSize, x0: x + NOTE_BORDER, x1: x + w - NOTE_BORDER, y0: cy - noteSize / 2, y1: cy + noteSize / 2});
  }
  // the marked points' labels: each `ay` px above its point, with a thin line down to it that stops `standoff` px
  // short of the point
  for (const {note, h} of notes) {
    if (note.showarrow === false) continue;
    const x = px(Number(note.x)), y = py(Number(note.y)), text = lines(note.text).join(" ");
    ctx.font = font(noteSize, family);
    const cy = y + (note.ay ?? -30);
    ctx.strokeStyle = note.arrowcolor || ink;
    ctx.lineWidth = note.arrowwidth ?? 1;
    ctx.beginPath();
    ctx.moveTo(x, cy + h / 2);
    ctx.lineTo(x, y - (note.standoff ?? 0));
    ctx.stroke();
    ctx.fillStyle = ink;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    ctx.fillText(text, x, cy);
    const tw = ctx.measureText(text).width;
    noteBoxes.push({text, size: noteSize, x0: x - tw / 2, x1: x + tw / 2, y0: cy - noteSize / 2, y1: cy + noteSize / 2});
  }

  // the legend under the plot: one row while the items fit, each a short line in the curve's colour (a marker for a
  // curve of markers) and its name
  const legend = Object.assign({}, tpl.legend || {}, layout.legend || {});
  const named = traces.filter((tr) => tr.t.showlegend !== false && tr.t.name);
  const legendOn = layout.showlegend === true || (layout.showlegend !== false && named.length > 1);
  const legendItems = [];
  if (legendOn && named.length) {
    const lf = Object.assign({size: 12, color: ink}, legend.font || {});
    ctx.font = font(lf.size, family);
    const itemH = Math.max(lf.size * LINE, 16) + 3, widths = named.map((tr) => 40 + ctx.measureText(lines(tr.t.name).join(" ")).width);
    // Plotly's rule for a legend left-anchored within the plot's width: one row when every item and the 5 px
    // between them fit in the plot's width, else columns as wide as the widest item, a new row before an item that
    // would reach the width
    const room = box.w;
    const one = widths.reduce((a, b) => a + b, 0) + 5 * (widths.length - 1) < room;
    const col = Math.max(...widths);
    let x0 = box.x + (legend.x ?? 0) * box.w, y0 = box.y + box.h - (legend.y ?? -0.1) * box.h, ox = 0, oy = 0;
    named.forEach((tr, n) => {
      const w = one ? widths[n] : col;
      if (ox && ox + w >= room) { ox = 0; oy += itemH; }
      const cx = x0 + ox, cy = y0 + oy + itemH / 2 + 6;  // the item's line from 5 px, its name from 40 px, as Plotly's
      if (tr.lineOn) {
        ctx.strokeStyle = tr.colour;
        ctx.lineWidth = Math.min(tr.width, 5);
        ctx.setLineDash(tr.dash);
        ctx.beginPath();
        ctx.moveTo(cx + 5, cy);
        ctx.lineTo(cx + 35, cy);
        ctx.stroke();
        ctx.setLineDash([]);
      }
      if (tr.dotsOn) { ctx.fillStyle = tr.mcolour; marker(ctx, tr.symbol, cx + 20, cy, Math.min(tr.msize, 16) / 2); }
      ctx.fillStyle = lf.color;
      ctx.font = font(lf.size, family);
      ctx.textAlign = "left";
      ctx.textBaseline = "middle";
      const name = lines(tr.t.name).join(" ");
      ctx.fillText(name, cx + 40, cy);
      legendItems.push({text: name, x0: cx + 40, x1: cx + w, y0: cy - lf.size / 2, y1: cy + lf.size / 2});
      ox += w + 5;
    });
  }

  const titleLines = writeTitle(ctx, layout, tpl, width, height, m, family, ink);
  return {box, kind: "lines", traces, xr, yr, title: titleLines.join(" "), labels: labelBoxes, legend: legendItems,
          notes: noteBoxes};
}

// ------------------------------------------------------------------------- the chart's box: canvas, hover, toolbar

const CAMERA = "M9 3 7.2 5H4a2 2 0 0 0-2 2v11a2 2 0 0 0 2 2h16a2 2 0 0 0 2-2V7a2 2 0 0 0-2-2h-3.2L15 3H9zm3 5a4.5 4.5 0 1 1 0 9 4.5 4.5 0 0 1 0-9zm0 2a2.5 2.5 0 1 0 0 5 2.5 2.5 0 0 0 0-5z";
const EXPAND = "M3 3h7v2H5v5H3zM14 3h7v7h-2V5h-5zM3 14h2v5h5v2H3zM19 14h2v7h-7v-2h5z";
const COLLAPSE = "M8 3h2v7H3V8h5zM14 3h2v5h5v2h-7zM3 14h7v7H8v-5H3zM14 14h7v2h-5v5h-2z";

document.head.appendChild(Object.assign(document.createElement("style"), {textContent: `
.atlas-map {position: relative}
.atlas-map canvas {display: block}
.atlas-map-tip {position: absolute; pointer-events: none; padding: 4px 8px; border-radius: 3px; white-space: pre;
  font-size: 12px; line-height: 1.35; box-shadow: 0 1px 3px rgba(0,0,0,0.15); z-index: 2}
.atlas-map-bar {position: absolute; top: 2px; right: 2px; display: flex; gap: 2px; opacity: 0; transition: opacity 0.2s; z-index: 3}
.atlas-map:hover .atlas-map-bar, .atlas-map-bar:focus-within {opacity: 1}
.atlas-map-bar button {border: none; background: transparent; padding: 3px; cursor: pointer; line-height: 0; border-radius: 3px}
.atlas-map-bar button:hover, .atlas-map-bar button:focus-visible {background: rgba(128,128,128,0.15)}
.atlas-map-bar svg {width: 16px; height: 16px; fill: rgba(128,128,128,0.8)}
`}));

function button(title, path, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.title = title;
  b.setAttribute("aria-label", title);
  b.innerHTML = `<svg viewBox="0 0 24 24" aria-hidden="true"><path d="${path}"/></svg>`;
  b.addEventListener("click", onClick);
  return b;
}

function setUp(div) {
  const canvas = document.createElement("canvas");
  canvas.setAttribute("role", "img");
  const tip = document.createElement("div");
  tip.className = "atlas-map-tip";
  tip.hidden = true;
  const bar = document.createElement("div");
  bar.className = "atlas-map-bar";
  div.classList.add("atlas-map");
  div.append(canvas, tip, bar);
  const m = {canvas, tip, bar};
  canvas.addEventListener("mousemove", (e) => hover(div, m, e));
  canvas.addEventListener("mouseleave", () => { tip.hidden = true; });
  return m;
}

function cellOf(m, e) {
  const r = m.canvas.getBoundingClientRect(), g = m.geometry;
  const x = e.clientX - r.left - g.box.x, y = e.clientY - r.top - g.box.y;
  if (x < 0 || y < 0 || x >= g.box.w || y >= g.box.h) return null;
  if (g.numeric) {  // the data's value under the pointer, and the cell holding it
    const trace = m.fig.data[0], ex = edgesOf(trace.x, g.cols), ey = edgesOf(trace.y, g.rows);
    const vx = g.xr[0] + x / g.box.w * (g.xr[1] - g.xr[0]);
    const vy = g.yDown ? g.yr[0] + y / g.box.h * (g.yr[1] - g.yr[0]) : g.yr[1] - y / g.box.h * (g.yr[1] - g.yr[0]);
    const j = Math.floor((vx - ex.first) / ex.step), i = Math.floor((vy - ey.first) / ey.step);
    return i >= 0 && i < g.rows && j >= 0 && j < g.cols ? [i, j] : null;
  }
  const j = Math.floor(x / g.cw), row = Math.floor(y / g.ch);
  return [g.yDown ? row : g.rows - 1 - row, j];
}

// The point nearest the pointer (within 20 px) of a figure of curves: [trace, index], or null.
function pointOf(m, e) {
  const r = m.canvas.getBoundingClientRect(), g = m.geometry;
  const x = e.clientX - r.left, y = e.clientY - r.top;
  let best = null, d = 400;
  g.traces.forEach((tr, n) => {
    for (let k = 0; k < tr.u.length; k++) {
      const a = g.box.x + (tr.u[k] - g.xr[0]) / (g.xr[1] - g.xr[0] || 1) * g.box.w;
      const b = g.box.y + g.box.h - (tr.w[k] - g.yr[0]) / (g.yr[1] - g.yr[0] || 1) * g.box.h;
      const dd = (a - x) ** 2 + (b - y) ** 2;
      if (dd < d) { d = dd; best = [n, k]; }
    }
  });
  return best;
}

function pointText(g, n, k) {
  const tr = g.traces[n], t = tr.t;
  const x = tr.x[k], y = tr.y[k];
  if (t.hovertemplate) {
    return lines(t.hovertemplate.replace(/<extra>.*?<\/extra>/g, "").replace(/%\{(\w+)(?::([^}]*))?\}/g,
      (_, name, spec) => formatted({x, y, text: t.text ? t.text[k] : ""}[name], spec)));
  }
  return [...(t.name ? lines(t.name) : []), `(${formatted(x)}, ${formatted(y)})`];
}

function showTip(div, m, e, text, colour) {
  const tpl = (m.fig.layout.template && m.fig.layout.template.layout) || {}, label = tpl.hoverlabel || {};
  m.tip.textContent = text.join("\n");
  Object.assign(m.tip.style, {background: label.bgcolor || "#fff", border: `1px solid ${colour || label.bordercolor || "#ddd"}`,
                              color: (label.font && label.font.color) || "#444",
                              fontFamily: (label.font && label.font.family) || "inherit"});
  m.tip.hidden = false;
  const r = div.getBoundingClientRect(), w = m.tip.offsetWidth;
  let x = e.clientX - r.left + 12;
  if (x + w > r.width) x = e.clientX - r.left - w - 12;
  m.tip.style.left = Math.max(0, x) + "px";
  m.tip.style.top = Math.max(0, e.clientY - r.top - m.tip.offsetHeight - 8) + "px";
}

function hover(div, m, e) {
  if (m.geometry && m.geometry.kind === "lines") {
    const at = pointOf(m, e);
    if (!at || m.fig.data[at[0]].hoverinfo === "skip") { m.tip.hidden = true; return; }
    showTip(div, m, e, pointText(m.geometry, ...at), m.geometry.traces[at[0]].colour);
    return;
  }
  const at = m.geometry && cellOf(m, e);
  if (!at) { m.tip.hidden = true; return; }
  const trace = m.fig.data[0];
  if (trace.hoverinfo === "skip" || trace.hoverinfo === "none") return;
  const [i, j] = at;
  const z = trace.z[i][j];
  if ((z == null || !Number.isFinite(z)) && trace.hoverongaps === false) { m.tip.hidden = true; return; }
  showTip(div, m, e, hoverText(trace, i, j, trace.z), null);
}

// The PNG download: the map painted again at `scale` times its size, in a file named as Plotly names its own.
function download(m, scale) {
  const c = document.createElement("canvas");
  (m.fig.lines ? paintLines : paint)(c, m.fig, m.width, m.height, scale);
  c.toBlob((blob) => {
    if (!blob) return;
    const a = Object.assign(document.createElement("a"), {href: URL.createObjectURL(blob), download: "newplot.png"});
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  }, "image/png");
}

// Draw `fig` (one heatmap trace, the theme's template in its layout) in the chart's box `div`, `height` CSS pixels
// tall and as wide as the box. opts: {words: {download, fullscreen, closeFullscreen}, full, onFullscreen, scale}.
export function drawMap(div, given, height, opts) {
  const m = div.atlasMapParts || (div.atlasMapParts = setUp(div));
  const t0 = given.data[0];
  if (t0.type === "scatter") return drawLines(div, m, given, height, opts);
  const x = rowsOf(t0.x), y = rowsOf(t0.y);
  const fig = {data: [Object.assign({}, t0, {z: rowsOf(t0.z), text: rowsOf(t0.text), hovertext: rowsOf(t0.hovertext), x, y})],
               layout: given.layout,
               // numbers along the axes (positions, dimensions): Plotly's automatic ticks, not a label per cell
               numeric: !(Array.isArray(x) && typeof x[0] === "string")};
  const width = Math.max(50, div.clientWidth || 600);
  m.fig = fig;
  m.width = width;
  m.height = height;
  m.geometry = paint(m.canvas, fig, width, height, window.devicePixelRatio || 1);
  m.canvas.setAttribute("aria-label", m.geometry.title || "heatmap");
  const trace = fig.data[0];
  const outlined = (fig.layout.shapes || []).reduce((n, sh) => n + ((sh.path || "").match(/M/gi) || []).length, 0);
  const g = m.geometry;
  div.atlasDrawn = {z: trace.z, text: trace.text || null, x: trace.x, y: trace.y, zmin: g.zmin, zmax: g.zmax,
                    title: g.title, outlined, labels: g.labels, titleText: (fig.layout.title || {}).text || ""};
  toolbar(m, opts);
}

// A figure of curves in the chart's box (drawMap's, for scatter traces).
function drawLines(div, m, given, height, opts) {
  const fig = {data: given.data.map((t) => Object.assign({}, t, {x: rowsOf(t.x), y: rowsOf(t.y)})), layout: given.layout,
               lines: true};
  const width = Math.max(50, div.clientWidth || 600);
  m.fig = fig;
  m.width = width;
  m.height = height;
  m.geometry = paintLines(m.canvas, fig, width, height, window.devicePixelRatio || 1);
  m.canvas.setAttribute("aria-label", m.geometry.title || "chart");
  const g = m.geometry;
  div.atlasDrawn = {kind: "lines", title: g.title, titleText: (fig.layout.title || {}).text || "", labels: g.labels,
                    legend: g.legend, noteBoxes: g.notes, plot: {w: g.box.w, h: g.box.h}, xrange: g.xr, yrange: g.yr,
                    curves: fig.data.map((t) => ({name: t.name || "", x: Array.from(t.x || []), y: Array.from(t.y || [])})),
                    notes: (fig.layout.annotations || []).map((a) => lines(a.text).join(" ")),
                    vlines: (fig.layout.shapes || []).map((sh) => Number(sh.x0))};
  toolbar(m, opts);
}

function toolbar(m, opts) {
  const w = opts.words || {};
  const key = `${w.download}|${w.fullscreen}|${w.closeFullscreen}|${!!opts.full}`;
  if (m.barKey !== key) {
    m.barKey = key;
    m.bar.replaceChildren(
      button(w.download || "Download plot as a PNG", CAMERA, () => download(m, opts.scale || 2)),
      button(opts.full ? w.closeFullscreen || "Close fullscreen" : w.fullscreen || "Fullscreen", opts.full ? COLLAPSE : EXPAND,
             () => m.onFullscreen && m.onFullscreen()));
  }
  m.onFullscreen = opts.onFullscreen;
  m.tip.hidden = true;
}

export function clear(div) {
  const m = div.atlasMapParts;
  if (!m) return;
  m.canvas.remove();
  m.tip.remove();
  m.bar.remove();
  div.classList.remove("atlas-map");
  delete div.atlasMapParts;
  delete div.atlasDrawn;
}
