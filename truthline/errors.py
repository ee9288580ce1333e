"""Errors a user can act on. The CLI turns them into one clear line and exit code 1."""

from __future__ import annotations


class TruthlineError(Exception):
    """A problem with the user's input or environment (exit code 1), never a bug."""


class ProjectError(TruthlineError):
    """A project definition is invalid; carries every problem with its file and field path."""

    def __init__(self, file: str, problems: list[tuple[str, str]]):
        self.file = file
        self.problems = problems
        lines = [f"{file}: {path}: {msg}" if path else f"{file}: {msg}" for path, msg in problems]
        super().__init__("\n".join(lines))


class FieldValueError(TruthlineError, ValueError):
    """A value does not fit its field type; names the field path."""

    def __init__(self, path: str, message: str):
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}")


class AnswerFormatError(TruthlineError, ValueError):
    """A model answer does not follow the JSON answer contract (METRICS.md §5)."""

    def __init__(self, reason: str, detail: str = ""):
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}" if detail else reason)
