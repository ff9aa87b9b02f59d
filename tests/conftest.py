"""Shared test set-up."""
import os

import pytest
import torch

# No trainer started ahead of time (app.jobs.JobManager.prepare) unless a test asks for one: set for the whole
# session, so that the module-wide browser servers (started before any per-test fixture) inherit it too.
# tests/app/test_jobs_standby.py passes standby=True to its managers.
os.environ["ATLAS_TRAINER_STANDBY"] = "0"
# Models that installed Python packages carry (model/hub/packages.py: all-MiniLM-L6-v2, installed by tools/test.sh)
# are not listed in the app during tests, so a page's model list is the test's own; tests of those models pass
# the search path themselves.
os.environ["ATLAS_PACKAGE_MODELS"] = "0"


@pytest.fixture(autouse=True, scope="session")
def one_thread():
    """The tests' matmuls are tiny: one thread is faster than two fighting over a 2-core CPU,
    and it keeps results independent of the machine's core count."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(autouse=True)
def private_runs_dir(tmp_path_factory, monkeypatch):
    """No test writes into the repository's runs/: every test gets its own empty ATLAS_RUNS_DIR
    (tests that start trainers use the `runs` fixture below, which also stops them)."""
    monkeypatch.setenv("ATLAS_RUNS_DIR", str(tmp_path_factory.mktemp("runs-auto")))


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """An empty ATLAS_RUNS_DIR for one test; afterwards every trainer it started is stopped."""
    from app.jobs import get_manager
    root = tmp_path / "runs"
    monkeypatch.setenv("ATLAS_RUNS_DIR", str(root))
    yield root
    m = get_manager(str(root.resolve()))
    m.close_standby()
    for r in m.list_runs():
        if r["state"] in ("queued", "running"):
            m.stop(r["id"])
    for p in list(m._procs.values()):
        try:
            p.wait(20)
        except Exception:
            p.kill()


def pytest_collection_modifyitems(items):
    """Browser tests are slow too: `-m "not slow"` is the inner loop, the README's command runs all."""
    for item in items:
        if item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def streamlit_left_as_found():
    """A test's script may stub a Streamlit function for its own run (AppTest runs scripts in this process);
    the stub must not outlive the test: a stubbed page_link once emptied the overview's links for every
    later test. Fails the test that leaks."""
    import streamlit as st
    from streamlit.delta_generator import DeltaGenerator
    before = (DeltaGenerator.page_link, st.page_link)
    yield
    after = (DeltaGenerator.page_link, st.page_link)
    if after != before:
        DeltaGenerator.page_link, st.page_link = before
        pytest.fail("a test left Streamlit's page_link replaced")
