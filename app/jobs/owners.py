"""A classroom shares one server (docs/classroom.md): who may manage a run, and how much everyone may ask for.

- ownership: a run started from the page stores the hash of its browser's owner token (job.json "owner",
  compared with HMAC's constant-time compare); stop / resume / delete with an `owner` act only on that browser's
  runs, unless the server runs in teacher mode (ATLAS_TEACHER_MODE=1). `owner=None` is the trusted caller (tests,
  scripts), never the page. The browser keeps its token in a cookie (OWNER_COOKIE, written by the training page:
  pages/views/train_owner.py), so a reload, which starts a new Streamlit session, keeps the learner's runs; the
  token never goes into a link, so a copied link gives nobody else's runs.
- limits: active runs per owner (ATLAS_QUEUE_PER_SESSION, 3) and in all (ATLAS_QUEUE_TOTAL, 12), and a disk
  budget for RUNS (ATLAS_RUNS_BUDGET_MB, 2000), each refused with a UserError."""
from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path

from app.jobs.runs import MB, free_mb, number, run_state
from model.messages import UserError
from model.training.run_files import ACTIVE

TEACHER_ENV = "ATLAS_TEACHER_MODE"
PER_OWNER_ENV, PER_OWNER_DEFAULT = "ATLAS_QUEUE_PER_SESSION", 3  # active (queued or running) runs of one session
TOTAL_ENV, TOTAL_DEFAULT = "ATLAS_QUEUE_TOTAL", 12                # active runs of everyone together
BUDGET_ENV, BUDGET_DEFAULT_MB = "ATLAS_RUNS_BUDGET_MB", 2000       # disk used by RUNS (runs + uploads)


def teacher_mode() -> bool:
    """ATLAS_TEACHER_MODE=1 (or true/yes/on): every session may stop, resume and delete every run."""
    return os.environ.get(TEACHER_ENV, "").strip().lower() in ("1", "true", "yes", "on")


OWNER_COOKIE = "atlas_owner"  # the cookie that keeps a browser's owner token across reloads
OWNER_COOKIE_DAYS = 30         # renewed on every visit of the training page
_TOKEN_BYTES = 24
_TOKEN = re.compile(r"[A-Za-z0-9_-]{%d}" % (4 * _TOKEN_BYTES // 3))  # what secrets.token_urlsafe(24) writes


def new_owner_token() -> str:
    """A browser's secret (192 random bits): the page keeps it in st.session_state and in the browser's cookie
    OWNER_COOKIE; job.json keeps only its hash."""
    return secrets.token_urlsafe(_TOKEN_BYTES)


def owner_from_cookie(value) -> str | None:
    """The owner token a browser's cookie holds, or None for no cookie or one this app did not write (any other
    text: it is never used, so a made-up or shortened value cannot stand for a token)."""
    return value if isinstance(value, str) and _TOKEN.fullmatch(value) else None


def cookie_script(token: str) -> str:
    """The browser's half: a <script> that writes `token` into the cookie OWNER_COOKIE for this site, renewed for
    OWNER_COOKIE_DAYS. SameSite=Strict (no other site's page sends it), Secure on https, never in a link."""
    if owner_from_cookie(token) is None:
        raise ValueError("not an owner token")
    age = OWNER_COOKIE_DAYS * 24 * 3600
    return ("<script>(() => {"
            "const secure = location.protocol === 'https:' ? '; Secure' : '';"
            f"document.cookie = '{OWNER_COOKIE}={token}; Max-Age={age}; Path=/; SameSite=Strict' + secure;"
            "})()</script>")


def owner_hash(token: str) -> str:
    return hashlib.sha256(("atlas-owner:" + str(token)).encode()).hexdigest()


def folder_bytes(folder: Path) -> int:
    """Bytes of every file under `folder` (links not followed; a file that vanishes meanwhile counts 0)."""
    total = 0
    for dirpath, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


class OwnersAndLimits:
    """Ownership and limits of JobManager (app/jobs/manager.py). Expects of the class it is mixed into:
    `root`, `teacher`, `per_owner`, `total`, `budget_mb` and the run-file readers of app/jobs/runs.py."""

    # ---- ownership
    def _owns(self, job: dict, owner: str) -> bool:
        stored = job.get("owner")
        return isinstance(stored, str) and hmac.compare_digest(stored, owner_hash(owner))

    def may_manage(self, job: dict, owner: str | None) -> bool:
        """May the session with this owner token stop, resume or delete the run of `job`? Yes for its own
        runs; in teacher mode for every run; `owner=None` is a trusted caller (tests, scripts)."""
        return owner is None or self.teacher or self._owns(job, owner)

    def _check_owner(self, d: Path, job: dict, owner: str | None) -> None:
        if not self.may_manage(job, owner):
            raise UserError("jobs.errors.not_yours", id=d.name)

    # ---- the queue's limits
    def _active_runs(self) -> list[dict]:
        """job.json of every queued or running run this app started."""
        out = []
        for d in self._run_dirs():
            job = self._job(d)
            if (job.get("options") or job.get("command")) and self._status(d).get("state") in ACTIVE:
                out.append(job)
        return out

    def _check_queue(self, owner: str | None) -> None:
        """UserError when the queue is full: this session's own runs, or everyone's."""
        active = self._active_runs()
        if len(active) >= self.total:
            raise UserError("jobs.errors.queue_full", count=len(active), limit=self.total)
        if owner is not None:
            mine = sum(1 for job in active if self._owns(job, owner))
            if mine >= self.per_owner:
                raise UserError("jobs.errors.too_many_yours", count=mine, limit=self.per_owner)

    # ---- the disk budget
    @staticmethod
    def run_bytes(parameters: int) -> int:
        """Disk a run will take, about: checkpoint.pt (weights + Adam's two moments), the exported model,
        curves and log."""
        return 16 * int(parameters) + 1_000_000

    def disk_used(self) -> int:
        """Bytes of every file in RUNS (runs and uploaded corpora)."""
        return folder_bytes(self.root)

    def _check_disk(self, need: int) -> None:
        """UserError when a run of `need` bytes would pass the disk budget or the disk's free space."""
        used = self.disk_used()
        if used + need > self.budget_mb * MB:
            raise UserError("jobs.errors.disk_budget", used=used / MB, budget=float(self.budget_mb), need=need / MB)
        free = free_mb(self.root)
        if 0 <= free < need / MB:
            raise UserError("jobs.errors.disk_full", path=str(self.root), free=free)

    def cleanup_candidates(self, limit: int = 5, owner: str | None = None) -> list[dict]:
        """The oldest finished (done, failed, stopped) runs with their size in bytes, oldest first, for
        the page's clean-up list: {"id", "state", "created_at", "bytes", "mine"}."""
        out = []
        for d in self._run_dirs():
            st = self._status(d)
            if st.get("state") in ACTIVE:
                continue
            job = self._job(d)
            created = number(job.get("created_at")) or number(st.get("created_at"))
            if not created:
                with contextlib.suppress(OSError):
                    created = d.stat().st_mtime
            out.append({"id": d.name, "state": run_state(st), "created_at": created or 0.0,
                        "bytes": folder_bytes(d), "mine": self.may_manage(job, owner)})
        return sorted(out, key=lambda r: r["created_at"])[:limit]

