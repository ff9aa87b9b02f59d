"""User corpora: a UTF-8 TSV file, one "source<TAB>target" pair a line, read and checked line by line."""
from __future__ import annotations

import os

from model.messages import UserError


def read_tsv_corpus(path_or_text, max_bytes: int = 5_000_000,
                    max_lines: int = 200_000) -> list[tuple[str, str]]:
    """Read and validate a parallel corpus in TSV form; raise a UserError (code "train.corpus.<problem>")
    naming the first bad line.

    path_or_text: bytes (e.g. an uploaded file's contents), a path (os.PathLike, or a str
    without tab or newline that names a file), or the TSV text itself (a str).
    Rules: UTF-8 (a BOM is allowed), exactly 2 tab-separated columns, neither empty after
    stripping spaces, no empty lines (one final newline is fine), at most max_bytes bytes and
    max_lines lines. Columns are returned stripped of surrounding whitespace.
    """
    if isinstance(path_or_text, (bytes, bytearray)):
        data = bytes(path_or_text)
    elif isinstance(path_or_text, os.PathLike) or (
            isinstance(path_or_text, str) and "\t" not in path_or_text and "\n" not in path_or_text
            and os.path.isfile(path_or_text)):
        size = os.path.getsize(path_or_text)
        if size > max_bytes:
            raise UserError("train.corpus.too_big", size=size, limit=max_bytes)
        with open(path_or_text, "rb") as f:
            data = f.read()
    elif isinstance(path_or_text, str):
        data = path_or_text.encode("utf-8")
    else:
        raise TypeError(f"expected bytes, str or a path, got {type(path_or_text).__name__}")

    if len(data) > max_bytes:
        raise UserError("train.corpus.too_big", size=len(data), limit=max_bytes)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data.strip():
        raise UserError("train.corpus.empty")

    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # one final newline
    pairs = []
    for lineno, raw in enumerate(lines, start=1):
        if lineno > max_lines:
            raise UserError("train.corpus.too_many_lines", line=lineno, limit=max_lines)
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise UserError("train.corpus.not_utf8", line=lineno, byte=e.start + 1) from None
        if not line.strip():
            raise UserError("train.corpus.empty_line", line=lineno)
        cols = line.split("\t")
        if len(cols) != 2:
            raise UserError("train.corpus.columns", line=lineno, found=len(cols))
        src, tgt = cols[0].strip(), cols[1].strip()
        if not src:
            raise UserError("train.corpus.first_empty", line=lineno)
        if not tgt:
            raise UserError("train.corpus.second_empty", line=lineno)
        pairs.append((src, tgt))
    return pairs
