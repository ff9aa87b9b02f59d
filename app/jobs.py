"""The background-training job manager: one object per server, shared by every session.

Each training run is a subprocess, `python -m model.train ... --out RUNS/<id>`, never a thread
of the server. Everything about a run lives in its folder, so a restarted server (a new
manager) finds the runs again:

    RUNS/<id>/job.json      written by the manager only: options, the command, pid, queue time
    RUNS/<id>/status.json   "queued" from the manager; then the trainer's own status (model/train.py)
    RUNS/<id>/metrics.jsonl the trainer's curves          RUNS/<id>/train.log  its stdout + stderr
    RUNS/<id>/checkpoint.pt, model/, corpus.tsv (an uploaded corpus)

RUNS is `runs/` in the repository, or the folder named by the environment variable
ATLAS_RUNS_DIR. At most `max_running` trainers (default 1, or ATLAS_MAX_RUNS) run at once;
other runs wait in state "queued" and start, oldest first, when `poll()` finds a free slot.
Pages call `poll()` on every refresh; `list_runs()` calls it too.

No st.* calls in the class: it is tested without Streamlit. `get_manager()` at the bottom is
the server-wide instance (st.cache_resource)."""
from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from model.checkpoint import atomic_write_json
from model.corpus import TASKS, CorpusError, read_tsv_corpus, split_pairs
from model.train import STATES, read_json
from model.train import read_metrics as _read_metrics_file

ROOT = Path(__file__).resolve().parent.parent
RUNS_ENV = "ATLAS_RUNS_DIR"
MAX_RUNS_ENV = "ATLAS_MAX_RUNS"
THREADS_ENV = "ATLAS_TRAIN_THREADS"

ALL_TASKS = TASKS + ("tsv",)
SIZES = ("tiny", "small", "custom")
SIZE_PRESET = {"tiny": "tiny", "small": "teaching", "custom": "teaching"}  # model.config.PRESETS names
ACTIVE = ("queued", "running")
STATE_KO = {"queued": "대기 중", "running": "학습 중", "done": "완료", "failed": "실패", "stopped": "멈춤"}

# Limits that protect a shared machine (the page shows them).
LIMITS = {
    "d_model": (8, 512), "heads": (1, 16), "d_ff": (8, 2048), "layers": (1, 6), "steps": (1, 20000),
    "batch_size": (1, 256), "warmup": (1, 20000), "lr_factor": (0.01, 10.0), "dropout": (0.0, 0.5),
    "label_smoothing": (0.0, 0.5),
}
MAX_PARAMETERS = 20_000_000
MAX_UPLOAD_BYTES = 5_000_000
DUPLICATE_SECONDS = 10.0  # Start pressed again with the same choices this soon: a double click, not a new run
MIN_PAIRS = 20  # a corpus must leave at least one validation pair (5 % split)
MAX_LEN = 64    # tokens per sentence the trainer keeps (--max-len)


class JobError(ValueError):
    """A refused request, with the reason in English and Korean (str() is the English one)."""

    def __init__(self, en: str, ko: str):
        super().__init__(en)
        self.en, self.ko = en, ko


@dataclass
class TrainOptions:
    """What the page asks for. Model fields other than the size are used with size="custom"."""
    task: str = "copy"
    size: str = "tiny"
    steps: int = 300
    batch_size: int = 32
    warmup: int = 100
    lr_factor: float = 0.5
    seed: int = 0
    d_model: int = 64
    heads: int = 4
    d_ff: int = 128
    layers: int = 2
    dropout: float = 0.0
    label_smoothing: float = 0.1
    positional: str = "sinusoidal"
    norm_first: bool = False
    tsv_bytes: bytes | None = field(default=None, repr=False)
    tsv_name: str = ""

    def public(self) -> dict:
        """JSON-friendly, without the uploaded bytes."""
        d = asdict(self)
        d.pop("tsv_bytes")
        return d


# -----------------------------------------------------------------------------
# small helpers

def runs_dir() -> Path:
    """RUNS: $ATLAS_RUNS_DIR if set, else runs/ in the repository."""
    env = os.environ.get(RUNS_ENV, "").strip()
    return Path(env).expanduser().resolve() if env else ROOT / "runs"


_CORPUS_KO = [
    (r"file is ([\d,]+) bytes; the limit is ([\d,]+) bytes", r"파일 크기가 \1바이트로, 한도 \2바이트를 넘습니다"),
    (r"the corpus is empty", "코퍼스가 비어 있습니다"),
    (r"line (\d+): too many lines; the limit is ([\d,]+)", r"\1번째 줄: 줄이 너무 많습니다 (한도 \2줄)"),
    (r"line (\d+): not valid UTF-8 \(byte (\d+) of the line\)",
     r"\1번째 줄: 올바른 UTF-8이 아닙니다 (그 줄의 \2번째 바이트)"),
    (r"line (\d+): empty line", r"\1번째 줄: 빈 줄입니다"),
    (r"the corpus leaves (\d+) training and (\d+) validation pairs; both must be at least 1",
     r"코퍼스를 나누면 학습 쌍이 \1개, 검증 쌍이 \2개입니다. 둘 다 1개 이상이어야 합니다"),
    (r"line (\d+): expected 2 tab-separated columns, found (\d+)",
     r"\1번째 줄: 탭으로 나뉜 열이 2개여야 하는데 \2개입니다"),
    (r"line (\d+): the first column is empty", r"\1번째 줄: 첫째 열이 비어 있습니다"),
    (r"line (\d+): the second column is empty", r"\1번째 줄: 둘째 열이 비어 있습니다"),
]


def corpus_message_ko(message: str) -> str:
    """Korean for model.corpus.read_tsv_corpus's messages (the English one if unknown)."""
    for pattern, ko in _CORPUS_KO:
        if re.fullmatch(pattern, message):
            return re.sub(pattern, ko, message)
    return message


def validate_upload(data: bytes | None, name: str = "", seed: int = 0) -> list[tuple[str, str]]:
    """An uploaded TSV's pairs, or JobError naming the problem (and the bad line)."""
    label = f"{name}: " if name else ""
    if data is None:
        raise JobError("Upload a TSV file (source<TAB>target, one pair a line) for the own-corpus task.",
                       "직접 만든 코퍼스로 학습하려면 TSV 파일(소스<TAB>타깃, 한 줄에 한 쌍)을 올려 주세요.")
    if len(data) > MAX_UPLOAD_BYTES:
        raise JobError(f"{label}the file is {len(data):,} bytes; the limit is {MAX_UPLOAD_BYTES:,} bytes (5 MB).",
                       f"{label}파일 크기가 {len(data):,}바이트로, 한도 {MAX_UPLOAD_BYTES:,}바이트(5 MB)를 넘습니다.")
    try:
        pairs = read_tsv_corpus(bytes(data), max_bytes=MAX_UPLOAD_BYTES)
    except CorpusError as e:
        raise JobError(f"{label}{e}", f"{label}{corpus_message_ko(str(e))}") from None
    if len(pairs) < MIN_PAIRS:
        raise JobError(f"{label}only {len(pairs)} pairs; at least {MIN_PAIRS} are needed (5 % are kept for validation).",
                       f"{label}쌍이 {len(pairs)}개뿐입니다. 최소 {MIN_PAIRS}개가 필요합니다(5%는 검증용으로 떼어 둡니다).")
    # The trainer's own split: sentences of the app's grammar from held-out combinations all go to test.
    splits = split_pairs(pairs, seed=seed)
    if not splits["train"] or not splits["valid"]:
        raise JobError(f"{label}the split leaves {len(splits['train'])} training and {len(splits['valid'])} validation "
                       f"pairs (the app's held-out English→Korean sentences all go to the test split); add other pairs.",
                       f"{label}나누고 나면 학습 쌍 {len(splits['train'])}개, 검증 쌍 {len(splits['valid'])}개만 남습니다"
                       f"(앱 문법에서 따로 떼어 둔 영어→한국어 문장은 모두 테스트용으로 갑니다). 다른 쌍을 더 넣어 주세요.")
    return pairs


def _check_range(name: str, value, en_name: str, ko_name: str):
    lo, hi = LIMITS[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (lo <= value <= hi) \
            or (isinstance(value, float) and math.isnan(value)):
        raise JobError(f"{en_name} must be between {lo} and {hi} (got {value}).",
                       f"{ko_name} 값은 {lo}에서 {hi} 사이여야 합니다 (입력: {value}).")


def validate_options(o: TrainOptions) -> None:
    """Raise JobError for anything the trainer should not be asked to do (sizes, limits, the upload)."""
    if o.task not in ALL_TASKS:
        raise JobError(f"Unknown task {o.task!r}.", f"알 수 없는 과제입니다: {o.task!r}.")
    if o.size not in SIZES:
        raise JobError(f"Unknown model size {o.size!r}.", f"알 수 없는 모델 크기입니다: {o.size!r}.")
    for name in ("steps", "batch_size", "warmup", "seed"):
        if not isinstance(getattr(o, name), int) or isinstance(getattr(o, name), bool):
            raise JobError(f"{name} must be a whole number.", f"{name} 값은 정수여야 합니다.")
    _check_range("steps", o.steps, "Training steps", "학습 스텝 수")
    _check_range("batch_size", o.batch_size, "Batch size", "배치 크기")
    _check_range("warmup", o.warmup, "Warm-up steps", "워밍업 스텝 수")
    _check_range("lr_factor", o.lr_factor, "The learning-rate factor", "학습률 배수")
    if o.size == "custom":
        _check_range("d_model", o.d_model, "d_model", "d_model")
        _check_range("heads", o.heads, "The number of heads", "헤드 수")
        _check_range("d_ff", o.d_ff, "d_ff", "d_ff")
        _check_range("layers", o.layers, "The number of layers", "레이어 수")
        _check_range("dropout", o.dropout, "Dropout", "드롭아웃")
        _check_range("label_smoothing", o.label_smoothing, "Label smoothing", "레이블 스무딩")
        if o.d_model % o.heads:
            raise JobError(f"The number of heads ({o.heads}) must divide d_model ({o.d_model}): each head gets "
                           f"d_model / heads dimensions.",
                           f"헤드 수({o.heads})가 d_model({o.d_model})을 나누어떨어지게 해야 합니다. 각 헤드는 "
                           f"d_model / 헤드 수 만큼의 차원을 받습니다.")
        if o.positional not in ("sinusoidal", "learned"):
            raise JobError(f"Unknown positional encoding {o.positional!r}.", f"알 수 없는 위치 인코딩: {o.positional!r}.")
    if o.task == "tsv":
        validate_upload(o.tsv_bytes, o.tsv_name, o.seed)


def train_arguments(o: TrainOptions) -> list[str]:
    """The trainer's options for these choices (without --out / --tsv / --threads)."""
    every = max(10, round(o.steps / 10))
    args = ["--task", o.task, "--preset", SIZE_PRESET[o.size], "--steps", str(o.steps),
            "--batch-size", str(o.batch_size), "--warmup", str(o.warmup), "--lr-factor", repr(float(o.lr_factor)),
            "--seed", str(o.seed), "--max-len", str(MAX_LEN), "--eval-every", str(every),
            "--ckpt-every", str(every), "--log-every", str(max(1, min(20, o.steps // 50)))]
    if o.size == "custom":
        args += ["--d-model", str(o.d_model), "--heads", str(o.heads), "--d-ff", str(o.d_ff),
                 "--layers", str(o.layers), "--dropout", repr(float(o.dropout)),
                 "--label-smoothing", repr(float(o.label_smoothing)), "--positional", o.positional]
        if o.norm_first:
            args.append("--norm-first")
    return args


def pid_alive(pid, run_dir: Path | None = None) -> bool:
    """Is `pid` a live trainer of `run_dir`? os.kill(pid, 0) says whether the pid exists; on Linux
    /proc/<pid> also rules out zombies and a pid reused by another program after a reboot or crash
    (its command line must hold "model.train" and the run folder's name)."""
    try:
        pid = int(pid)
    except (TypeError, ValueError):
        return False
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    except OSError:
        return False
    proc = Path(f"/proc/{pid}")
    if not Path("/proc/self").exists():
        return True  # no procfs (macOS): trust os.kill
    try:
        stat = (proc / "stat").read_text()
        cmdline = (proc / "cmdline").read_bytes().decode("utf-8", "replace").split("\0")
    except FileNotFoundError:
        return False
    except OSError:
        return True
    if stat[stat.rfind(")") + 2:][:1] in ("Z", "X"):
        return False  # exited, not yet reaped
    if not any("model.train" in part for part in cmdline):
        return False
    if run_dir is not None and not any(run_dir.name in part for part in cmdline):
        return False
    return True


def clean_metrics(records: list[dict]) -> list[dict]:
    """Drop records a resumed run redid: when a step repeats or goes back (a run killed after its
    last checkpoint, then resumed), the later records replace the earlier ones from that step on."""
    out: list[dict] = []
    last: dict[str, int] = {}
    for r in records:
        if not isinstance(r, dict):
            continue
        kind, step = r.get("kind"), r.get("step")
        if isinstance(step, bool) or not isinstance(step, (int, float)) or not math.isfinite(step):
            continue
        if kind in last and step <= last[kind]:
            out = [x for x in out if x.get("kind") != kind or x["step"] < step]
        out.append(r)
        last[kind] = step
    return out


def _json_object(path: Path) -> dict:
    """A JSON file that should hold an object; {} when it is missing, damaged or holds something else."""
    obj = read_json(path, {})
    return obj if isinstance(obj, dict) else {}


def _number(v):
    """A finite int/float from a file, else None (files can be damaged or hand-edited)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return v


def _count(v) -> int:
    v = _number(v)
    return max(0, int(v)) if v is not None else 0


def _samples(v) -> list[dict]:
    """Sample predictions from status.json: dicts of strings only."""
    if not isinstance(v, list):
        return []
    return [{k: str(s.get(k, "")) for k in ("source", "target", "prediction")} for s in v if isinstance(s, dict)]


def _fmt_id_time(t: float) -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.localtime(t))


# -----------------------------------------------------------------------------
# the manager

class JobManager:
    def __init__(self, root: str | os.PathLike | None = None, max_running: int | None = None,
                 threads: int | None = None, python: str = sys.executable):
        self.root = Path(root).expanduser().resolve() if root else runs_dir()
        if max_running is None:
            max_running = int(os.environ.get(MAX_RUNS_ENV, "1") or 1)
        self.max_running = max(1, max_running)
        if threads is None:
            threads = int(os.environ.get(THREADS_ENV, "0") or 0) or max(1, (os.cpu_count() or 2) - 1)
        self.threads = threads  # trainer CPU threads: leave a core for the web server
        self.python = python
        self._lock = threading.RLock()
        self._procs: dict[str, subprocess.Popen] = {}
        self._flops: float | None = None
        self._vocab: dict[str, int] = {}
        self._avg_tokens: dict[str, float] = {}
        self.root.mkdir(parents=True, exist_ok=True)
        self.poll()  # recover: runs whose process vanished become "stopped"; queued runs start

    # ---- paths and files
    def run_path(self, run_id: str) -> Path:
        if not isinstance(run_id, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", run_id):
            raise JobError(f"Not a run id: {run_id!r}", f"실행 ID가 아닙니다: {run_id!r}")
        return self.root / run_id

    def _job(self, d: Path) -> dict:
        return _json_object(d / "job.json")

    def _status(self, d: Path) -> dict:
        return _json_object(d / "status.json")

    def _set_status(self, d: Path, **fields) -> None:
        st = self._status(d)
        st.update(fields, updated_at=time.time())
        atomic_write_json(d / "status.json", st)

    def _run_dirs(self) -> list[Path]:
        try:
            return sorted(p for p in self.root.iterdir()
                          if p.is_dir() and not p.name.startswith(".") and
                          ((p / "status.json").exists() or (p / "job.json").exists()))
        except OSError:
            return []

    @contextlib.contextmanager
    def _exclusive(self):
        """This manager's lock, plus a file lock so two servers sharing RUNS do not both launch a run."""
        with self._lock:
            try:
                import fcntl
            except ImportError:  # Windows
                yield
                return
            self.root.mkdir(parents=True, exist_ok=True)  # RUNS may have been deleted while the server runs
            with open(self.root / ".jobs.lock", "a+") as f:
                fcntl.flock(f, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(f, fcntl.LOCK_UN)

    def _pid(self, d: Path, st: dict | None = None, job: dict | None = None):
        st = self._status(d) if st is None else st
        job = self._job(d) if job is None else job
        return st.get("pid") or job.get("pid")

    def _is_live(self, d: Path, st: dict, job: dict) -> bool:
        proc = self._procs.get(d.name)
        if proc is not None:
            return proc.poll() is None
        return pid_alive(self._pid(d, st, job), d)

    # ---- the queue
    def poll(self) -> None:
        """Reap finished trainers, mark vanished ones "stopped", start queued runs while slots are free."""
        with self._exclusive():
            for run_id, proc in list(self._procs.items()):
                rc = proc.poll()
                if rc is not None:
                    del self._procs[run_id]
                    self._settle(self.root / run_id, rc)
            running, waiting = 0, []
            for d in self._run_dirs():
                st, job = self._status(d), self._job(d)
                state = st.get("state")
                if state not in ACTIVE:
                    continue
                launched = bool(job.get("pid")) or (state == "running")
                if not launched:
                    if job.get("command"):  # a run this app queued (not one started by hand)
                        waiting.append((_number(job.get("queued_at")) or 0, d))
                elif self._is_live(d, st, job):
                    running += 1
                else:
                    self._mark_vanished(d, st)
            for _, d in sorted(waiting, key=lambda x: x[0]):
                if running >= self.max_running:
                    break
                self._launch(d)
                running += 1

    def _settle(self, d: Path, rc: int) -> None:
        """A trainer we launched has exited; if it did not write a final state, write one."""
        st = self._status(d)
        if st.get("state") not in ACTIVE:
            return
        step = _count(st.get("step"))
        if rc <= 0:
            name = signal.Signals(-rc).name if -rc in signal.Signals._value2member_map_ else f"signal {-rc}"
            how = f"was ended by {name}" if rc else "exited"
            self._set_status(d, state="stopped", message=f"the training process {how} at step {step}; "
                                                         f"resume to continue from the last checkpoint")
        else:
            why = self.error_line(d.name)
            self._set_status(d, state="failed", message=f"the trainer exited with code {rc} at step {step}"
                                                        + (f": {why}" if why else ""))

    def _mark_vanished(self, d: Path, st: dict) -> None:
        self._set_status(d, state="stopped", message=f"the training process is gone (server restart or crash) at step "
                                                     f"{_count(st.get('step'))}; resume to continue from the last checkpoint")

    def _launch(self, d: Path) -> None:
        job = self._job(d)
        cmd = job.get("command")
        cmd = list(cmd) if isinstance(cmd, list) and all(isinstance(c, str) for c in cmd) else []
        if job.get("resume") and (d / "args.json").exists():
            cmd = [self.python, "-m", "model.train", "--resume", str(d)]
        if not cmd:
            self._set_status(d, state="failed", message="no command to run (job.json is missing or damaged)")
            return
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": str(self.threads)}
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        with open(d / "train.log", "ab") as log:
            log.write(f"\n$ {' '.join(cmd)}\n".encode())
            log.flush()
            try:
                proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
            except OSError as e:
                self._set_status(d, state="failed", message=f"could not start the trainer: {e}")
                return
        self._procs[d.name] = proc
        job.update(pid=proc.pid, launched_at=time.time(), launches=int(job.get("launches", 0)) + 1)
        atomic_write_json(d / "job.json", job)

    # ---- requests
    def start(self, options: TrainOptions) -> str:
        """Validate, create RUNS/<task>-<time>/, queue it; returns the run id."""
        validate_options(options)
        est = self.estimate(options)
        if est["parameters"] > MAX_PARAMETERS:
            raise JobError(f"This model has {est['parameters']:,} parameters; the limit here is {MAX_PARAMETERS:,}. "
                           f"Make d_model, d_ff or the number of layers smaller.",
                           f"이 모델의 파라미터는 {est['parameters']:,}개로, 이곳의 한도 {MAX_PARAMETERS:,}개를 넘습니다. "
                           f"d_model, d_ff, 레이어 수를 줄여 주세요.")
        digest = hashlib.sha256(options.tsv_bytes or b"").hexdigest()
        with self._exclusive():
            now = time.time()
            twin = self._recent_twin(options.public(), digest, now)
            if twin is not None:  # a double click on Start (or two tabs): one run, not two
                return twin
            base = f"{options.task}-{_fmt_id_time(now)}"
            run_id, n = base, 1
            while (self.root / run_id).exists():
                n += 1
                run_id = f"{base}-{n}"
            d = self.root / run_id
            d.mkdir(parents=True)
            args = train_arguments(options)
            if options.task == "tsv":
                (d / "corpus.tsv").write_bytes(options.tsv_bytes or b"")
                args += ["--tsv", str(d / "corpus.tsv")]
            cmd = [self.python, "-m", "model.train", *args, "--threads", str(self.threads), "--out", str(d)]
            atomic_write_json(d / "job.json", {
                "id": run_id, "created_at": now, "queued_at": now, "options": options.public(),
                "tsv_sha256": digest, "command": cmd,
                "estimate": {k: v for k, v in est.items() if k != "config"}, "config": est["config"], "pid": None})
            atomic_write_json(d / "status.json", {
                "state": "queued", "step": 0, "total_steps": options.steps, "task": options.task,
                "message": "waiting for a free training slot", "created_at": now, "updated_at": now})
        self.poll()
        return run_id

    def _recent_twin(self, public: dict, digest: str, now: float) -> str | None:
        """An active run created in the last DUPLICATE_SECONDS with exactly these options, if any."""
        for d in self._run_dirs():
            job = self._job(d)
            created = _number(job.get("created_at"))
            if (created is not None and 0 <= now - created < DUPLICATE_SECONDS and job.get("options") == public
                    and job.get("tsv_sha256") == digest and self._status(d).get("state") in ACTIVE):
                return d.name
        return None

    def stop(self, run_id: str) -> None:
        """SIGTERM a running trainer (it checkpoints and writes "stopped"); a queued run is taken off the queue."""
        d = self.run_path(run_id)
        with self._exclusive():
            st, job = self._status(d), self._job(d)
            if st.get("state") not in ACTIVE:
                return
            launched = bool(job.get("pid")) or st.get("state") == "running"
            if not launched:
                self._set_status(d, state="stopped", message="taken off the queue before it started; resume to queue it again")
                return
            pid = self._pid(d, st, job)
            if self._is_live(d, st, job):
                try:
                    os.kill(int(pid), signal.SIGTERM)
                except OSError:
                    pass
                job["stop_requested_at"] = time.time()
                atomic_write_json(d / "job.json", job)
            else:
                self._mark_vanished(d, st)

    def resume(self, run_id: str) -> None:
        """Queue a stopped (or failed, with a checkpoint) run again; the trainer continues with --resume."""
        d = self.run_path(run_id)
        with self._exclusive():
            st, job = self._status(d), self._job(d)
            if not self._resumable(d, st):
                state = st.get("state") if st.get("state") in STATES else "unknown"
                raise JobError(f"Run {run_id} cannot be resumed (state: {state}).",
                               f"{run_id} 실행은 이어서 학습할 수 없습니다 (상태: {STATE_KO.get(state, '알 수 없음')}).")
            if not job.get("command") and not (d / "args.json").exists():
                raise JobError(f"Run {run_id} has neither args.json nor job.json: nothing to resume.",
                               f"{run_id} 실행에는 args.json도 job.json도 없어 이어서 할 수 없습니다.")
            now = time.time()
            job.update(pid=None, queued_at=now, resume=True)
            atomic_write_json(d / "job.json", job)
            self._set_status(d, state="queued", message="waiting for a free training slot (resume)", pid=None)
        self.poll()

    def delete(self, run_id: str) -> None:
        d = self.run_path(run_id)
        with self._exclusive():
            st = self._status(d)
            if st.get("state") in ACTIVE:
                raise JobError(f"Run {run_id} is {st.get('state')}; stop it before deleting it.",
                               f"{run_id} 실행이 진행 중이거나 대기 중입니다. 먼저 멈춘 뒤 삭제하세요.")
            if not d.is_dir():
                raise JobError(f"There is no run {run_id}.", f"{run_id} 실행이 없습니다.")
            self._procs.pop(run_id, None)
            shutil.rmtree(d)

    @staticmethod
    def _resumable(d: Path, st: dict) -> bool:
        state = st.get("state")
        if state == "failed":
            # A checkpoint the trainer could not read stays unreadable: resuming again would fail again.
            message = st.get("message") if isinstance(st.get("message"), str) else ""
            return (d / "checkpoint.pt").exists() and not message.startswith("cannot resume:")
        return state == "stopped"

    # ---- reading
    def list_runs(self) -> list[dict]:
        """Summaries of every run in RUNS, newest first (advances the queue first)."""
        self.poll()
        out = [self.summary(d.name) for d in self._run_dirs()]
        return sorted(out, key=lambda r: r["created_at"], reverse=True)

    def summary(self, run_id: str) -> dict:
        """One run for the page. Every field is checked: a damaged or hand-edited file shows as
        "unknown" / "–" with a message, never as an exception."""
        d = self.run_path(run_id)
        st, job = self._status(d), self._job(d)
        args = _json_object(d / "args.json")
        cfg = _json_object(d / "config.json") or job.get("config") or {}
        if not isinstance(cfg, dict):
            cfg = {}
        options = job.get("options") if isinstance(job.get("options"), dict) else {}
        estimate = job.get("estimate") if isinstance(job.get("estimate"), dict) else {}
        created = _number(job.get("created_at")) or _number(st.get("created_at")) or _number(st.get("started_at"))
        if not created:
            with contextlib.suppress(OSError):
                created = d.stat().st_mtime
        state = st.get("state") if st.get("state") in STATES else "unknown"
        message = st.get("message") if isinstance(st.get("message"), str) else ""
        if not st and (d / "status.json").exists():
            message = "status.json is damaged; the run's other files are untouched"
        if state == "queued" and job.get("pid"):
            message = "starting the trainer (loading PyTorch and the data)"
        task = next((t for t in (st.get("task"), args.get("task"), options.get("task")) if isinstance(t, str) and t),
                    "?")
        model = d / "model"
        return {
            "id": run_id, "task": task, "state": state, "step": _count(st.get("step")),
            "total": _count(st.get("total_steps")) or _count(args.get("steps")) or _count(options.get("steps")),
            "loss": _number(st.get("loss")), "lr": _number(st.get("lr")), "val_loss": _number(st.get("val_loss")),
            "val_token_acc": _number(st.get("val_token_acc")), "val_exact": _number(st.get("val_exact")),
            "tokens_per_second": _number(st.get("tokens_per_second")),
            "eta_seconds": _number(st.get("eta_seconds")) if state == "running" else None,
            "elapsed_seconds": _number(st.get("elapsed_seconds")), "created_at": created or 0.0,
            "message": message, "samples": _samples(st.get("samples")),
            "parameters": _number(st.get("parameters")) or _number(estimate.get("parameters")),
            "device": st.get("device"), "config": cfg, "options": options,
            "estimate": estimate, "managed": bool(job),
            "resumable": self._resumable(d, st) and (bool(job.get("command")) or (d / "args.json").exists()),
            "inspectable": state not in ACTIVE and (model / "model.safetensors").is_file(),
            "path": str(d),
        }

    def read_metrics(self, run_id: str) -> list[dict]:
        return clean_metrics(_read_metrics_file(self.run_path(run_id) / "metrics.jsonl"))

    def model_dir(self, run_id: str) -> Path | None:
        """The run's model/ folder (absolute) once it holds weights, for the inspector."""
        m = (self.run_path(run_id) / "model").resolve()
        return m if (m / "model.safetensors").is_file() and (m / "config.json").is_file() else None

    def log_tail(self, run_id: str, lines: int = 20) -> str:
        try:
            with open(self.run_path(run_id) / "train.log", "rb") as f:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - 8000))
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return ""
        return "\n".join(text.strip().splitlines()[-lines:])

    def error_line(self, run_id: str) -> str:
        """The trainer's last error from train.log: the exception line, not the traceback's frames
        (the page shows it to a learner; the whole log is one click away)."""
        lines = [line.rstrip() for line in self.log_tail(run_id, 40).splitlines() if line.strip()]
        useful = [line for line in lines if not line.startswith(("Traceback ", " ", "\t", "$ "))
                  and set(line) - set("^~ ")]
        return useful[-1][:300] if useful else ""

    # ---- estimates
    def vocab_size(self, task: str) -> int:
        if task not in self._vocab:
            from model.train import build_tokenizer
            self._vocab[task] = build_tokenizer(task).vocab_size
        return self._vocab[task]

    def tokens_per_example(self, task: str, pairs: list[tuple[str, str]] | None = None) -> float:
        """Average source + target tokens of an example (+ eos/bos), measured on the task's data."""
        key = task if task != "tsv" else None
        if key in self._avg_tokens:
            return self._avg_tokens[key]
        from model.train import build_tokenizer
        tok = build_tokenizer(task)
        if pairs is None:
            if task == "tsv":
                return 2 * 20.0
            from model.corpus import task_pairs
            pairs = task_pairs(task)["train"][:400]
        pairs = pairs[:400] or [("", "")]
        limit = MAX_LEN - 2
        per = [(0 if task == "lm" else min(len(tok.encode(s)), limit) + 1) + min(len(tok.encode(t)), limit) + 1
               for s, t in pairs]
        avg = sum(per) / len(per)
        if key:
            self._avg_tokens[key] = avg
        return avg

    def throughput(self) -> float:
        """Floating-point operations per second of this machine on one small matmul, measured once
        per server with the trainer's thread count."""
        if self._flops is None:
            import torch
            n, reps = 256, 8
            prev = torch.get_num_threads()
            torch.set_num_threads(self.threads)
            try:
                a, b = torch.randn(n, n), torch.randn(n, n)
                a @ b
                t0 = time.perf_counter()
                for _ in range(reps):
                    a @ b
                dt = time.perf_counter() - t0
            finally:
                torch.set_num_threads(prev)
            self._flops = max(2 * n ** 3 * reps / max(dt, 1e-9), 1e8)
        return self._flops

    def config_for(self, o: TrainOptions):
        """The exact TransformerConfig the trainer will build (model.train's own option parsing)."""
        from model.train import build_parser, model_config
        args = build_parser().parse_args(train_arguments(o) + ["--out", "x"])
        return model_config(args, self.vocab_size(o.task))

    def estimate(self, o: TrainOptions, pairs: list[tuple[str, str]] | None = None) -> dict:
        """Parameters (exact: the model built on the meta device), memory (parameters + Adam
        states + a rough activation count) and time (6 · parameters · tokens FLOPs over the
        measured matmul speed, at an assumed efficiency). An estimate, not a promise."""
        import torch
        from model.transformer import Transformer
        cfg = self.config_for(o)
        with torch.device("meta"):
            params = Transformer(cfg).num_parameters()
        if o.task == "tsv" and pairs is None and o.tsv_bytes:
            with contextlib.suppress(CorpusError):
                pairs = read_tsv_corpus(o.tsv_bytes, max_bytes=MAX_UPLOAD_BYTES)
        tok_ex = self.tokens_per_example(o.task, pairs)
        tokens_per_step = o.batch_size * tok_ex
        layers = cfg.n_encoder_layers + cfg.n_decoder_layers
        seq = max(tok_ex / 2, 1)
        # weights, gradients, Adam's two moments: 4 copies of float32
        state_bytes = 4 * 4 * params
        # activations kept for backward: ~16 d_model-vectors per token per layer, plus attention maps
        act_bytes = 4 * (16 * cfg.d_model * tokens_per_step * layers
                         + 3 * o.batch_size * cfg.n_heads * seq * seq * layers * 2
                         + 3 * tokens_per_step * cfg.vocab_size)
        flops_per_step = 6 * params * tokens_per_step
        # Calibrated on this project's CPU runs: big matmuls reach ~70 % of the benchmark; each
        # step also pays a fixed Python/kernel-launch cost of a few milliseconds per layer.
        speed = self.throughput() * 0.7
        step_s = flops_per_step / speed + 0.004 * (layers + 1)
        evals = max(1, o.steps // max(10, round(o.steps / 10)))
        eval_s = 2 * params * tok_ex * (500 + 100 * tok_ex / 2) / speed + 0.3  # 500 teacher-forced + 200 greedy
        seconds = o.steps * step_s + evals * eval_s + 5.0  # + start-up (imports, data)
        return {"parameters": params, "memory_bytes": int(state_bytes + act_bytes), "state_bytes": int(state_bytes),
                "activation_bytes": int(act_bytes), "flops": float(flops_per_step * o.steps),
                "tokens_per_step": tokens_per_step, "seconds": seconds, "machine_flops": self.throughput(),
                "config": cfg.to_dict()}


# -----------------------------------------------------------------------------
# the server-wide instance

try:
    import streamlit as _st
except ImportError:  # the class works without Streamlit
    _st = None


def _cache(fn):
    if _st is None:
        import functools
        return functools.lru_cache(maxsize=None)(fn)
    return _st.cache_resource(show_spinner=False)(fn)


@_cache
def get_manager(root: str | None = None) -> JobManager:
    """The JobManager shared by every session of this server (one per runs folder). Pages call
    `get_manager(str(runs_dir()))` so a changed ATLAS_RUNS_DIR gets its own manager."""
    return JobManager(root)
