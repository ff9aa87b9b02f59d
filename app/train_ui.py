"""Pure helpers for the training page: figures from metrics records, CSV, formatting, and Korean
for the trainer's status messages. No st.* calls (tested without Streamlit)."""
from __future__ import annotations

import csv
import io
import math
import re

import plotly.graph_objects as go

CSV_FIELDS = ("kind", "step", "loss", "lr", "tokens_per_second", "val_loss", "val_token_acc", "val_exact", "time")
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")


def series(records: list[dict], kind: str, key: str) -> tuple[list[int], list[float]]:
    xs, ys = [], []
    for r in records:
        v = r.get(key)
        if r.get("kind") == kind and isinstance(v, (int, float)) and math.isfinite(v):
            xs.append(r["step"])
            ys.append(float(v))
    return xs, ys


def _layout(fig: go.Figure, title: str, x_title: str, y_title: str, height: int = 320) -> go.Figure:
    fig.update_layout(title=title, height=height, margin=dict(l=10, r=10, t=50, b=10),
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0),
                      hovermode="x unified")
    fig.update_layout(xaxis_title=x_title, yaxis_title=y_title)  # (update_yaxes would retitle yaxis2 too)
    return fig


def loss_figure(records: list[dict], *, title: str, train_name: str, val_name: str, x_title: str,
                y_title: str) -> go.Figure:
    """Training loss (label-smoothed, mean over the logging window) and validation loss."""
    fig = go.Figure()
    x, y = series(records, "train", "loss")
    fig.add_scatter(x=x, y=y, mode="lines", name=train_name, line=dict(color=PALETTE[0]))
    x, y = series(records, "eval", "val_loss")
    fig.add_scatter(x=x, y=y, mode="lines+markers", name=val_name, line=dict(color=PALETTE[1]))
    return _layout(fig, title, x_title, y_title)


def accuracy_figure(records: list[dict], *, title: str, token_name: str, exact_name: str, x_title: str,
                    y_title: str) -> go.Figure:
    fig = go.Figure()
    for key, name, colour in (("val_token_acc", token_name, PALETTE[2]), ("val_exact", exact_name, PALETTE[3])):
        x, y = series(records, "eval", key)
        if x:
            fig.add_scatter(x=x, y=y, mode="lines+markers", name=name, line=dict(color=colour))
    fig.update_yaxes(range=[0, 1.02])
    return _layout(fig, title, x_title, y_title)


def lr_figure(records: list[dict], *, title: str, lr_name: str, tps_name: str, x_title: str) -> go.Figure:
    """Learning rate (the warm-up schedule) and throughput on a second axis."""
    fig = go.Figure()
    x, y = series(records, "train", "lr")
    fig.add_scatter(x=x, y=y, mode="lines", name=lr_name, line=dict(color=PALETTE[4]))
    x, y = series(records, "train", "tokens_per_second")
    fig.add_scatter(x=x, y=y, mode="lines", name=tps_name, line=dict(color=PALETTE[5], dash="dot"), yaxis="y2")
    fig.update_layout(yaxis=dict(rangemode="tozero"),
                      yaxis2=dict(title=tps_name, overlaying="y", side="right", showgrid=False, rangemode="tozero"))
    return _layout(fig, title, x_title, lr_name)


def compare_figure(runs: dict[str, list[dict]], kind: str, key: str, *, title: str, x_title: str,
                   y_title: str) -> go.Figure:
    """One curve per run, for the same metric."""
    fig = go.Figure()
    for i, (name, records) in enumerate(runs.items()):
        x, y = series(records, kind, key)
        fig.add_scatter(x=x, y=y, mode="lines+markers" if kind == "eval" else "lines", name=name,
                        line=dict(color=PALETTE[i % len(PALETTE)]))
    return _layout(fig, title, x_title, y_title, height=380)


def metrics_csv(records: list[dict], run: str | None = None) -> str:
    buf = io.StringIO()
    fields = (("run",) if run is not None else ()) + CSV_FIELDS
    w = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in records:
        w.writerow({**({"run": run} if run is not None else {}), **r})
    return buf.getvalue()


def compare_csv(runs: dict[str, list[dict]]) -> str:
    parts = [metrics_csv(recs, run=name).split("\n", 1) for name, recs in runs.items()]
    if not parts:
        return ""
    return parts[0][0] + "\n" + "".join(p[1] for p in parts)


def fmt_duration(seconds, lang: str = "en") -> str:
    if seconds is None or not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
        return "–"
    s = int(round(max(seconds, 0)))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    units = ("시간", "분", "초") if lang == "ko" else ("h", "min", "s")
    sep = " "
    if h:
        return f"{h}{units[0]}{sep}{m}{units[1]}" if lang == "ko" else f"{h} {units[0]} {m} {units[1]}"
    if m:
        return f"{m}{units[1]}{sep}{s}{units[2]}" if lang == "ko" else f"{m} {units[1]} {s} {units[2]}"
    return f"{s}{units[2]}" if lang == "ko" else f"{s} {units[2]}"


def fmt_bytes(n) -> str:
    n = float(n or 0)
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def fmt_count(n) -> str:
    if n is None:
        return "–"
    n = float(n)
    if n >= 1e6:
        return f"{n / 1e6:.2f}M"
    if n >= 1e3:
        return f"{n / 1e3:.1f}k"
    return f"{n:.0f}"


def fmt_num(v, digits: int = 3) -> str:
    return "–" if not isinstance(v, (int, float)) or not math.isfinite(v) else f"{v:.{digits}f}"


def fmt_pct(v) -> str:
    return "–" if not isinstance(v, (int, float)) or not math.isfinite(v) else f"{100 * v:.1f}%"


_MESSAGE_KO = [
    (r"starting the trainer \(loading PyTorch and the data\)", "학습 프로세스를 시작하는 중 (PyTorch와 데이터를 불러오는 중)"),
    (r"status\.json is damaged; the run's other files are untouched",
     "status.json 파일이 손상되었습니다. 이 실행의 다른 파일은 그대로 있습니다"),
    (r"no checkpoint\.pt to resume from: training starts again from step 0",
     "이어서 학습할 checkpoint.pt가 없어 0 스텝부터 다시 학습합니다"),
    (r"waiting for a free training slot \(resume\)", "학습 자리가 나기를 기다리는 중 (이어서 학습)"),
    (r"waiting for a free training slot", "학습 자리가 나기를 기다리는 중"),
    (r"finished (\d+) steps in (\d+) s", r"\1 스텝을 \2초 만에 마쳤습니다"),
    (r"stopped at step (\d+); resume to continue", r"\1 스텝에서 멈췄습니다. 이어서 학습할 수 있습니다"),
    (r"taken off the queue before it started; resume to queue it again",
     "시작 전에 대기열에서 뺐습니다. 이어서 학습을 누르면 다시 대기열에 들어갑니다"),
    (r"the training process is gone \(server restart or crash\) at step (\d+); resume to continue from the last checkpoint",
     r"학습 프로세스가 사라졌습니다(서버 재시작 또는 충돌, \1 스텝). 마지막 체크포인트부터 이어서 학습할 수 있습니다"),
    (r"the training process (?:was ended by (\S+)|exited) at step (\d+); resume to continue from the last checkpoint",
     lambda m: f"학습 프로세스가 {m.group(2)} 스텝에서 끝났습니다" + (f"({m.group(1)})" if m.group(1) else "")
     + ". 마지막 체크포인트부터 이어서 학습할 수 있습니다"),
    (r"the trainer exited with code (-?\d+) at step (\d+)(?:: ([\s\S]*))?",
     lambda m: f"학습 프로세스가 {m.group(2)} 스텝에서 코드 {m.group(1)}로 끝났습니다"
     + (f": {m.group(3)}" if m.group(3) else "")),
    (r"the loss became (\S+) at step (\d+) \(learning rate (\S+)\); training stopped\. The checkpoint from step (\d+) "
     r"is kept\. Try a lower learning-rate factor or more warm-up steps\.",
     r"\2 스텝에서 손실이 \1이(가) 되어 학습을 멈췄습니다(학습률 \3). \4 스텝의 체크포인트는 그대로 남아 있습니다. "
     r"학습률 배수를 낮추거나 워밍업 스텝을 늘려 보세요."),
]


def message_ko(message: str) -> str:
    """Korean for the trainer's and the job manager's usual status messages (else the original)."""
    from app.jobs import corpus_message_ko
    if not message:
        return message
    if message.startswith("corpus: "):
        return "코퍼스 오류: " + corpus_message_ko(message[len("corpus: "):])
    if message.startswith("cannot resume: "):
        return "이어서 학습할 수 없습니다: " + message[len("cannot resume: "):]
    for pattern, ko in _MESSAGE_KO:
        if re.fullmatch(pattern, message):
            return re.sub(pattern, ko, message)
    return message
