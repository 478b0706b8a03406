"""How errors become tool statuses: one table per tool, applied at one boundary (`tasks.base.call_tool`).

A tool body raises; it does not catch an engine error only to return a status. Each tool declares
`errors`, a table from error classes to the status each becomes (a `Failure` when it needs more than
a status: other details, extra Output fields, a transient retry); the raised error's most specific
class in the table wins, as the first matching `except` clause would. A `ToolStatusError` names its own
status and needs no entry. Everything else is a bug, reported by `call_tool` as an internal error.

Transient failures become `TransientToolError` carrying the error Output, so inside a Prefect task
(tasks/prefect_task.py) the raise triggers the retries and the last try returns the status.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from udm.errors import ToolError, ToolStatusError

if TYPE_CHECKING:
    from tasks.base import Tool, ToolContext

__all__ = ["ErrorTable", "Failure", "TransientToolError", "failure_for"]


class TransientToolError(ToolError):
    """A failure worth retrying; `result` is the error Output to return once retries run out."""

    def __init__(self, message: str, result: BaseModel, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.result = result
        self.retry_after = retry_after

    def __reduce__(self) -> tuple[type[TransientToolError], tuple[str, BaseModel, float | None]]:
        """Pickle by the constructor's arguments: a task run on a Dask worker sends it back."""
        return (type(self), (str(self), self.result, self.retry_after))


@dataclass(frozen=True)
class Failure:
    """What one error class becomes in a tool's Output.

    `details` replaces the tool's `error_details(exc)`; `fields` adds Output fields read from the error
    (e.g. the candidates of an ambiguous target); `transient` (a flag, or read from the error) makes the
    call retryable, waiting the error's own `retry_after` when it has one, else this `retry_after`.
    """

    status: str
    details: Callable[[Any], str] | None = None
    fields: Callable[[Any], dict[str, Any]] | None = None
    transient: bool | Callable[[Any], bool] = False
    retry_after: float | None = None


ErrorTable = Mapping[type[BaseException], "str | Failure"]


def _rule(table: ErrorTable, exc: BaseException) -> Failure | None:
    """The entry for the most specific class of `exc` in the table (a ToolStatusError's own status)."""
    for klass in type(exc).__mro__:
        entry = table.get(klass)
        if entry is not None:
            return Failure(entry) if isinstance(entry, str) else entry
        if klass is ToolStatusError:
            # Its own status beats the table's entries for its general bases (ToolError, UdmError).
            return Failure(exc.status, transient=exc.transient)  # type: ignore[attr-defined]
    return None


def failure_for(tool: Tool[Any, Any], exc: Exception, data: BaseModel, ctx: ToolContext) -> BaseModel | None:
    """The error Output `exc` becomes for this call, or None when the tool does not expect it.

    Raises TransientToolError (carrying that Output) when the failure is worth retrying."""
    rule = _rule(tool.errors, exc)
    if rule is None:
        return None
    details = rule.details(exc) if rule.details is not None else tool.error_details(exc)
    fields = rule.fields(exc) if rule.fields is not None else {}
    try:
        out = tool.failed(data, ctx, rule.status, details, **fields)
    except ValidationError:
        return None  # a status the Output does not know: a bug, reported as an internal error
    transient = rule.transient(exc) if callable(rule.transient) else rule.transient
    if transient:
        retry_after = getattr(exc, "retry_after", None)
        raise TransientToolError(details, result=out, retry_after=retry_after or rule.retry_after) from exc
    return out
