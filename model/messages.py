"""Messages from code that knows no language (model/, the trainer, the job manager).

A `Message` is a catalogue key plus its arguments; the app translates it only when it shows it
(`app.i18n.say`), so no English sentence is ever translated back into Korean. `UserError` is the one
exception class for bad user input anywhere: it carries a Message (and an optional technical detail
shown verbatim, e.g. a file name or the original exception text)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Message:
    code: str                      # a catalogue key, e.g. "errors.empty_list"
    args: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"code": self.code, "args": {k: (v.to_dict() if isinstance(v, Message) else v)
                                            for k, v in self.args.items()}}

    @classmethod
    def from_dict(cls, d) -> "Message | None":
        """A Message read back from JSON (status files); None for anything malformed."""
        if not isinstance(d, dict) or not isinstance(d.get("code"), str):
            return None
        args = d.get("args") if isinstance(d.get("args"), dict) else {}
        return cls(d["code"], {k: (cls.from_dict(v) or v) if isinstance(v, dict) else v for k, v in args.items()})

    def __str__(self) -> str:  # for logs and tracebacks only; the UI translates
        return f"{self.code} {self.args}" if self.args else self.code


class UserError(ValueError):
    """Bad user input, as a Message (`code`, `**args`) plus an optional untranslated detail."""

    def __init__(self, code: str, detail: str | None = None, **args):
        self.message = Message(code, args)
        self.detail = detail
        super().__init__(str(self.message) + (f": {detail}" if detail else ""))
