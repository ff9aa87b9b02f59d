"""Errors shared by modules that must stay importable without torch (model.hub lists folders on the first page)."""


class CheckpointError(RuntimeError):
    """A model directory or checkpoint that cannot be read or written; the message names the file."""
