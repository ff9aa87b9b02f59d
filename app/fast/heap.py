"""Full garbage collections made cheap. With torch, plotly and a model loaded, one full collection walks ~200k
long-lived objects while holding the GIL (Streamlit's collection after every run, runner.postScriptGC, is off in
.streamlit/config.toml for that reason; Python still starts full collections of its own as objects pile up).
`settle_heap` collects once, then moves what is alive now (modules, loaded models) into the permanent
generation (gc.freeze): later collections walk only what the runs themselves create, so reruns stop queueing
behind the collector. bench/gc_freeze.py measures a full collection with and without it."""
from __future__ import annotations

import gc
import threading

_started = threading.Event()


def settle_heap() -> None:
    """Collect once and freeze what is alive: after the imports at startup, at the end of the server's warm-up
    and after each model load (app.resources)."""
    gc.collect()
    gc.freeze()


def settle_heap_at_start() -> None:
    """settle_heap, on the server's first script run only (app/main.py calls it on every run)."""
    if not _started.is_set():
        _started.set()
        settle_heap()
