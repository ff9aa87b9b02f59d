// The drawing canvas of the ViT section (app/fast/canvas.py): a small grid of grey pixels painted with the mouse,
// a pen or a finger. Painting happens here, in the browser, while the pointer moves; the grid goes to the server
// once, when the pointer is released (one rerun per stroke, not one per pixel).
// A stroke that starts on an empty pixel inks every pixel it crosses; one that starts on ink erases instead.
const boards = new WeakMap();

function draw(b) {
  const {canvas, size, max} = b, ctx = canvas.getContext("2d");
  const css = canvas.clientWidth || b.px, ratio = window.devicePixelRatio || 1;
  if (canvas.width !== Math.round(css * ratio)) { canvas.width = Math.round(css * ratio); canvas.height = canvas.width; }
  const cell = canvas.width / size;
  for (let r = 0; r < size; r++) {
    for (let c = 0; c < size; c++) {
      const v = Math.round(255 * (1 - b.pixels[r * size + c] / max));
      ctx.fillStyle = `rgb(${v},${v},${v})`;
      ctx.fillRect(c * cell, r * cell, cell, cell);
    }
  }
  ctx.strokeStyle = "#bbbbbb";
  ctx.lineWidth = Math.max(1, ratio);
  ctx.beginPath();
  for (let k = 0; k <= size; k++) {
    const v = Math.min(canvas.width - ctx.lineWidth / 2, Math.max(ctx.lineWidth / 2, k * cell));
    ctx.moveTo(v, 0); ctx.lineTo(v, canvas.height); ctx.moveTo(0, v); ctx.lineTo(canvas.width, v);
  }
  ctx.stroke();
  canvas.dataset.pixels = b.pixels.join(",");  // what is painted, readable by tests and assistive tools
}

function cellAt(b, event) {
  const box = b.canvas.getBoundingClientRect();
  const x = (event.clientX - box.left) / box.width, y = (event.clientY - box.top) / box.height;
  return [Math.min(b.size - 1, Math.max(0, Math.floor(y * b.size))), Math.min(b.size - 1, Math.max(0, Math.floor(x * b.size)))];
}

// Every cell on the segment from the last cell to this one (a fast stroke skips no pixel).
function paintTo(b, [r1, c1]) {
  const [r0, c0] = b.last || [r1, c1];
  const n = Math.max(Math.abs(r1 - r0), Math.abs(c1 - c0), 1);
  for (let i = 0; i <= n; i++) {
    const r = Math.round(r0 + (r1 - r0) * i / n), c = Math.round(c0 + (c1 - c0) * i / n);
    b.pixels[r * b.size + c] = b.ink;
  }
  b.last = [r1, c1];
  draw(b);
}

function setUp(parentElement, setTriggerValue) {
  const canvas = document.createElement("canvas");
  canvas.className = "atlas-digit-canvas";
  canvas.tabIndex = 0;
  canvas.setAttribute("role", "img");
  Object.assign(canvas.style, {touchAction: "none", cursor: "crosshair", display: "block", maxWidth: "100%",
                               aspectRatio: "1 / 1", border: "1px solid #bbbbbb", borderRadius: "4px"});
  const title = document.createElement("div");
  title.className = "atlas-digit-canvas-title";
  Object.assign(title.style, {fontSize: "0.875rem", marginBottom: "0.4rem"});
  parentElement.append(title, canvas);
  const b = {canvas, title, pixels: [], size: 8, max: 16, px: 320, drawing: null, last: null, ink: 0, send: setTriggerValue};
  canvas.addEventListener("pointerdown", (e) => {
    if (e.button !== undefined && e.button > 0) return;  // the main button, a pen or a finger
    e.preventDefault();
    canvas.setPointerCapture(e.pointerId);
    const [r, c] = cellAt(b, e);
    b.drawing = e.pointerId;
    b.before = b.pixels.join(",");
    b.ink = b.pixels[r * b.size + c] > 0 ? 0 : b.max;
    b.last = null;
    paintTo(b, [r, c]);
  });
  canvas.addEventListener("pointermove", (e) => {
    if (b.drawing !== e.pointerId) return;
    e.preventDefault();
    const events = e.getCoalescedEvents ? e.getCoalescedEvents() : [];
    for (const each of (events.length ? events : [e])) paintTo(b, cellAt(b, each));
  });
  const end = (e) => {
    if (b.drawing !== e.pointerId) return;
    b.drawing = null;
    b.last = null;
    if (b.pixels.join(",") !== b.before) b.send("drawn", b.pixels.slice());
  };
  canvas.addEventListener("pointerup", end);
  canvas.addEventListener("pointercancel", end);
  canvas.addEventListener("lostpointercapture", end);
  boards.set(parentElement, b);
  return b;
}

export default function ({data, parentElement, setTriggerValue}) {
  const b = boards.get(parentElement) || setUp(parentElement, setTriggerValue);
  b.send = setTriggerValue;
  b.size = data.size; b.max = data.max; b.px = data.px;
  b.canvas.style.width = data.px + "px";
  b.canvas.setAttribute("aria-label", data.title);
  b.title.textContent = data.title;
  // the server's grid replaces the painted one, except while a stroke is being drawn
  if (b.drawing === null) b.pixels = data.pixels.slice();
  draw(b);
}
