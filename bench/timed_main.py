"""Run a Streamlit script and write how long each of its runs takes, measured in the server (bench/controls.py).

    ATLAS_BENCH_SCRIPT=app/main.py ATLAS_BENCH_RUNLOG=/tmp/runs.jsonl streamlit run bench/timed_main.py

Wraps Streamlit's ScriptRunner._run_script (whole reruns and fragment reruns alike) and appends one JSON line per
run: its start (time.time(), the same clock the bench reads), wall and thread-CPU seconds, and whether it was a
fragment run. The browser's own clock cannot give this: a websocket message's event fires only when the page's
main thread is free, so while Plotly draws the first figures of a rerun, the later messages (and the run's end)
are stamped late. The script itself runs unchanged (runpy, as `__main__`).

With ATLAS_BENCH_PROFILE=DIR each later run is also profiled (cProfile, in the run's own thread) into
DIR/run-<start>-<wall>.prof, for `python -m pstats` or pstats.Stats(*files): where a control's run spends its time.
The profiler slows the run; read the split, not the total."""
import cProfile
import json
import os
import runpy
import sys
import time
from pathlib import Path

from streamlit.runtime.scriptrunner import script_runner

SCRIPT = Path(os.environ["ATLAS_BENCH_SCRIPT"]).resolve()
sys.path.insert(0, str(SCRIPT.parent.parent))



def log_run(t0: float, c0: float, **extra) -> None:
    line = {"start": t0, "wall": time.time() - t0, "cpu": time.thread_time() - c0, **extra}
    with open(os.environ["ATLAS_BENCH_RUNLOG"], "a") as f:
        f.write(json.dumps(line) + "\n")


if getattr(script_runner.ScriptRunner, "atlas_timed", False):  # this file runs on every rerun: patched already
    runpy.run_path(str(SCRIPT), run_name="__main__")
else:  # the server's first run: patch the runner for the next runs, and time this one from here
    untimed = script_runner.ScriptRunner._run_script

    def timed(self, rerun_data):
        t0, c0 = time.time(), time.thread_time()
        profiler = cProfile.Profile() if os.environ.get("ATLAS_BENCH_PROFILE") else None
        if profiler:
            profiler.enable()
        try:
            return untimed(self, rerun_data)
        finally:
            if profiler:
                profiler.disable()
                folder = Path(os.environ["ATLAS_BENCH_PROFILE"])
                folder.mkdir(parents=True, exist_ok=True)
                profiler.dump_stats(folder / f"run-{t0:.3f}-{time.time() - t0:.3f}.prof")
            log_run(t0, c0, fragment=bool(getattr(rerun_data, "fragment_id_queue", None)))

    script_runner.ScriptRunner._run_script = timed
    script_runner.ScriptRunner.atlas_timed = True
    t0, c0 = time.time(), time.thread_time()
    try:
        runpy.run_path(str(SCRIPT), run_name="__main__")
    finally:
        log_run(t0, c0, fragment=False, first=True)
