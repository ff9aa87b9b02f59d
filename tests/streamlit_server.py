"""Start `streamlit run app/main.py` on a free loopback port (for browser tests and screenshots)."""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("ATLAS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def served(root: Path = ROOT, env_extra: dict | None = None, timeout: float = 90, log_path: Path | None = None,
           script: Path | None = None):
    """`streamlit run app/main.py` (or `script`) of the tree `root` (its .streamlit/config.toml applies) on a
    free loopback port, once healthy; yields (url, the server process). Used by the browser tests and bench/."""
    port = free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env_extra or {})}
    if log_path is None and (ROOT / "test-artifacts").is_dir():
        log_path = ROOT / "test-artifacts" / f"streamlit-{port}.log"
    log = open(log_path, "w") if log_path is not None else subprocess.DEVNULL
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(script or root / "app" / "main.py"),
         "--server.headless", "true", "--server.address", "127.0.0.1", "--server.port", str(port),
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none", "--server.runOnSave", "false"],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with {proc.returncode} (log: {log_path})")
            try:
                if urllib.request.urlopen(url + "/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.5)
        else:
            raise TimeoutError("streamlit did not become healthy")
        yield url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
        if log is not subprocess.DEVNULL:
            log.close()


@contextlib.contextmanager
def streamlit_server(env_extra: dict | None = None, timeout: float = 90):
    with served(env_extra=env_extra, timeout=timeout) as (url, _):
        yield url


def wait_idle(page, timeout=120_000):
    """Wait until Streamlit's script run has finished (its running indicator is gone)."""
    page.wait_for_selector("[data-testid='stMain'] h1", timeout=timeout)
    page.wait_for_timeout(300)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout)
    page.wait_for_timeout(800)
