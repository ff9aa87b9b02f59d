import os, runpy, sys, time, cProfile, pstats, io
from pathlib import Path
from streamlit.runtime.scriptrunner import script_runner
SCRIPT = Path("/work/main/app/main.py") if not os.environ.get("ATLAS_PROF_ROOT") else Path(os.environ["ATLAS_PROF_ROOT"]) / "app/main.py"
sys.path.insert(0, str(SCRIPT.parent.parent))
if getattr(script_runner.ScriptRunner, "atlas_prof", False):
    runpy.run_path(str(SCRIPT), run_name="__main__")
else:
    untimed = script_runner.ScriptRunner._run_script
    count = [0]
    def timed(self, rerun_data):
        count[0] += 1
        n = count[0]
        P = cProfile.Profile()
        t0 = time.perf_counter()
        P.enable()
        try:
            return untimed(self, rerun_data)
        finally:
            P.disable()
            wall = time.perf_counter() - t0
            out = os.environ.get("ATLAS_PROF_OUT", "/tmp/prof/runs")
            os.makedirs(out, exist_ok=True)
            P.dump_stats(f"{out}/run{n:02d}-{int(wall*1000)}ms.prof")
    script_runner.ScriptRunner._run_script = timed
    from streamlit.runtime.scriptrunner import script_cache as _sc
    import traceback
    _clear = _sc.ScriptCache.clear
    def clear(self):
        with open("/tmp/prof/clears.log", "a") as f:
            f.write("CLEAR\n" + "".join(traceback.format_stack(limit=12)) + "\n")
        return _clear(self)
    _sc.ScriptCache.clear = clear
    script_runner.ScriptRunner.atlas_prof = True
    runpy.run_path(str(SCRIPT), run_name="__main__")
