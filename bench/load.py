"""Many learners on one server: N websocket sessions typing sentences into the attention inspector.

    python bench/load.py --clients 1 4 8 16 --seconds 60 [--url http://127.0.0.1:8501 | --root OTHER_CHECKOUT]
                         [--servers K] [--name N]

Starts `streamlit run app/main.py` headless on a free loopback port (unless --url names a running one) and
drives N concurrent sessions over Streamlit's own websocket protocol (BackMsg / ForwardMsg protobufs on
/_stcore/stream, as the browser does; no browser). Each session opens the inspector, then, until the time is
up, puts a new sentence into the sentence box (a rerun with that widget value), waits for the server's
`script_finished`, and pauses 200–500 ms before the next one ("typing"). Latency = rerun request sent →
script finished. Sentences: the shipped model's example sentences (shared by every learner, as the example
list offers them) and, for --fresh of them, a sentence no other session types (two examples joined by
"and"). Errors: an exception element on the page, a run that did not finish successfully, a lost connection
or a rerun that took over --timeout seconds. The server's memory (VmRSS) is sampled every second, and its
CPU time per rerun (user + system, all threads) is what a rerun costs however busy the machine is.

Writes bench/results/<name>.json and prints p50 / p95 / max, reruns per second, errors and RSS per N."""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from streamlit.proto.BackMsg_pb2 import BackMsg  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402
from streamlit.proto.WidgetStates_pb2 import WidgetState  # noqa: E402

from bench.common import machine, pct, table, write  # noqa: E402
from model.lessons.probe import example_groups  # noqa: E402
from tests.streamlit_server import served  # noqa: E402

PAGE = "inspector"
TEXT_KEY = "insp_text"
FINISHED_OK = {ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY}


def sentences() -> list[str]:
    return [s for _, group in example_groups("en-ko") for s in group]


def rss_kib(pid: int) -> int | None:
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process and all its threads so far."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


_SERVED = itertools.count()


@contextlib.contextmanager
def server(root: Path = ROOT, env_extra: dict | None = None, timeout: float = 120):
    """`streamlit run app/main.py` of the tree `root` on a free loopback port; yields (url, pid)."""
    log = Path(f"/tmp/atlas-load-{os.getpid()}-{next(_SERVED)}.log")
    with served(root, env_extra, timeout, log_path=log) as (url, proc):
        yield url, proc.pid


class Session:
    """One browser tab, spoken to in Streamlit's protocol."""

    def __init__(self, ws):
        self.ws = ws
        self.page_hash = ""
        self.query = ""  # the address's query string: a browser sends the current one with every rerun
        self.text_id: str | None = None
        self.exceptions = 0

    async def rerun(self, widgets: list[WidgetState], timeout: float) -> tuple[float, bool]:
        """Ask for a rerun with these widget values; (seconds until script_finished, finished successfully)."""
        msg = BackMsg()
        cs = msg.rerun_script
        cs.page_name = PAGE
        cs.page_script_hash = self.page_hash
        cs.query_string = self.query
        cs.widget_states.widgets.extend(widgets)
        t0 = time.perf_counter()
        await self.ws.send(msg.SerializeToString())
        while True:
            raw = await asyncio.wait_for(self.ws.recv(), timeout=max(0.1, t0 + timeout - time.perf_counter()))
            fm = ForwardMsg()
            fm.ParseFromString(raw)
            kind = fm.WhichOneof("type")
            if kind == "new_session":
                self.page_hash = fm.new_session.page_script_hash or self.page_hash
            elif kind == "page_info_changed":
                self.query = fm.page_info_changed.query_string
            elif kind == "navigation":
                if fm.navigation.page_script_hash:
                    self.page_hash = fm.navigation.page_script_hash
            elif kind == "delta":
                el = fm.delta.new_element
                which = el.WhichOneof("type") if fm.delta.WhichOneof("type") == "new_element" else None
                if which == "exception":
                    self.exceptions += 1
                elif which == "text_area" and el.text_area.id.endswith(TEXT_KEY):
                    self.text_id = el.text_area.id
            elif kind == "script_finished":
                if fm.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    continue
                return time.perf_counter() - t0, fm.script_finished in FINISHED_OK


async def learner(url: str, seed: int, stop_at: float, pool: list[str], fresh: float, timeout: float, out: dict):
    from websockets.asyncio.client import connect
    rng = random.Random(seed)
    ws_url = url.replace("http://", "ws://") + "/_stcore/stream"
    try:
        async with connect(ws_url, subprotocols=["streamlit"], max_size=None, open_timeout=60,
                           ping_interval=None) as ws:
            s = Session(ws)
            took, ok = await s.rerun([], timeout=max(timeout, 120))  # opening the page (first run loads the model)
            out["open"].append(took)
            if not ok or s.text_id is None:
                out["errors"].append("page did not open" if not ok else "no sentence box found")
                return
            while time.monotonic() < stop_at:
                text = rng.choice(pool)
                if rng.random() < fresh:
                    other = rng.choice(pool)
                    text = f"{text.rstrip('.?! ')} and {other[:1].lower()}{other[1:]}"
                w = WidgetState(id=s.text_id, string_value=text)
                before = s.exceptions
                try:
                    took, ok = await s.rerun([w], timeout)
                except asyncio.TimeoutError:
                    out["errors"].append(f"no script_finished within {timeout} s")
                    return
                out["latency"].append(took)
                if not ok:
                    out["errors"].append("run did not finish successfully")
                if s.exceptions > before:
                    out["errors"].append(f"exception on the page for {text!r}")
                await asyncio.sleep(rng.uniform(0.2, 0.5))
    except Exception as e:  # a lost connection is an error of the run, not of the benchmark
        out["errors"].append(f"{type(e).__name__}: {e}")


def total(values: list) -> float | None:
    return None if not values or any(v is None for v in values) else sum(values)


async def one_level(urls: list[str], pids: list[int | None], n: int, seconds: float, fresh: float, timeout: float,
                    seed: int) -> dict:
    """n sessions for `seconds`; with several servers (a proxy with sticky sessions), session i stays on
    server i mod len(urls). CPU time and memory are summed over the servers."""
    pool = sentences()
    out = {"latency": [], "errors": [], "open": []}
    rss = []
    pids = [p for p in pids if p]

    async def sample():
        while True:
            if pids:
                rss.append(total([rss_kib(p) for p in pids]))
            await asyncio.sleep(1)

    sampler = asyncio.create_task(sample())
    cpu0 = total([cpu_seconds(p) for p in pids])
    own0 = time.process_time()
    stop_at = time.monotonic() + seconds
    t0 = time.monotonic()
    await asyncio.gather(*(learner(urls[i % len(urls)], seed * 1000 + i, stop_at, pool, fresh, timeout, out)
                           for i in range(n)))
    wall = time.monotonic() - t0
    cpu1 = total([cpu_seconds(p) for p in pids])
    own1 = time.process_time()
    sampler.cancel()
    lat = out["latency"]
    rss = [r for r in rss if r]
    return {"clients": n, "reruns": len(lat), "reruns_per_s": round(len(lat) / wall, 2),
            "p50_s": round(pct(lat, 0.5), 3), "p95_s": round(pct(lat, 0.95), 3), "max_s": round(max(lat, default=0), 3),
            "mean_s": round(statistics.fmean(lat), 3) if lat else None, "errors": len(out["errors"]),
            # the server's CPU time per rerun: what a rerun costs, whatever else the machine is doing
            "server_cpu_ms_per_rerun": round(1000 * (cpu1 - cpu0) / len(lat)) if lat and cpu0 is not None and cpu1 is not None else None,
            # this load generator's own CPU time per rerun: it shares the machine with the servers
            "client_cpu_ms_per_rerun": round(1000 * (own1 - own0) / len(lat)) if lat else None,
            "error_samples": out["errors"][:5],
            "rss_mib_start": round(rss[0] / 1024) if rss else None, "rss_mib_end": round(rss[-1] / 1024) if rss else None,
            "rss_mib_max": round(max(rss) / 1024) if rss else None}


def load_average() -> str:
    try:
        return open("/proc/loadavg").read().split()[:3]
    except OSError:
        return []


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, nargs="+", default=[1, 4, 8, 16])
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--fresh", type=float, default=0.3, help="share of sentences no other session types")
    p.add_argument("--timeout", type=float, default=30, help="a rerun slower than this counts as an error")
    p.add_argument("--url", help="a running server (default: start one)")
    p.add_argument("--root", type=Path, default=ROOT,
                   help="serve this checkout's app/main.py (e.g. an export of an older commit, to compare)")
    p.add_argument("--servers", type=int, default=1,
                   help="server processes on this machine, each session sticky to one (docs/classroom.md)")
    p.add_argument("--name", default="load")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    rows = []
    with contextlib.ExitStack() as stack:
        if args.url:
            urls, pids = [args.url], [None]
        else:
            started = [stack.enter_context(server(args.root.resolve())) for _ in range(args.servers)]
            urls, pids = [u for u, _ in started], [p for _, p in started]
        for i in range(len(urls)):  # warm-up: model loaded, caches primed, on every server
            asyncio.run(one_level(urls[i:i + 1], pids[i:i + 1], 1, 5, args.fresh, 120, args.seed))
        for n in args.clients:
            before = load_average()
            row = asyncio.run(one_level(urls, pids, n, args.seconds, args.fresh, args.timeout, args.seed))
            row["load_avg_before"] = before
            rows.append(row)
            print(table([{k: v for k, v in row.items() if k not in ("error_samples", "load_avg_before")}]), flush=True)
    payload = {"machine": machine(), "cpus": os.cpu_count(), "seconds": args.seconds, "fresh": args.fresh,
               "servers": 1 if args.url else args.servers,
               "root": str(args.root), "rows": rows}
    path = write(args.name, payload)
    print(table([{k: v for k, v in r.items() if k not in ("error_samples", "load_avg_before")} for r in rows]))
    print(f"written: {path}")


if __name__ == "__main__":
    main()
