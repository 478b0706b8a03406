"""The one exception tree of the project; third-party errors are translated into it at one boundary.

Every error the engine, the tools (`tasks/`) or the flows raise on purpose is a `UdmError`, so one
`except UdmError` at a user-facing edge (the CLI's `run`, the tool boundary `tasks.base.call_tool`)
turns any of them into a clear message. Classes marked [module] are defined beside the code that
raises them and re-parented here; tests/foundation/test_error_tree.py checks this drawing against the
classes themselves. Tools never map these to statuses one by one: each tool declares a table
(`Tool.errors`) and `call_tool` applies it (see tasks/failures.py).

UdmError
├── ConfigError                settings that cannot be used
├── PathOutsideError           a path that escapes every allowed directory
│   └── PathProtectedError     a path inside the engine's own state, which no tool may touch
├── InvalidPathError           a path that can never be used: NUL byte, not UTF-8, too long, a device/FIFO
├── PathChangedError           a path that changed under an operation between its check and its use
├── DocumentError              a Markdown/YAML/JSON file that cannot be read or parsed
│   ├── DataLimitError [udm.datalimits]  structured data nested too deep or too large
│   └── MarkdownParseError [udm.markdown.tree]  a file the Markdown parser fails on with every rule set
├── TargetError                a section, block or key that cannot be resolved
│   ├── TargetNotFoundError
│   └── AmbiguousTargetError   (carries the candidates)
├── PatchError                 an invalid patch or an operation that cannot apply
│   ├── ConflictError          the files moved on since the patch was planned
│   ├── ValidationFailedError [udm.patch.validate]  the patched files would break the manual
│   └── SerializationError [udm.patch.keypath]  a value the text's format cannot write
├── TransactionError           the commit protocol failed (journal, rename, recovery)
│   ├── LockTimeoutError       another writer held the lock too long
│   └── Refused [udm.patch.journal]  a journal that is not what the engine writes (quarantined)
├── IndexBusyError             the DuckDB index stayed locked past the bounded wait
├── SqlRefusedError            a statement that is not one read-only SELECT/WITH query
│   └── SqlQueryFailedError    a read-only query that failed while it ran (or its worker did)
├── SqlTimeoutError            a query stopped at its time limit
├── SqlMemoryError             a query past its memory or temporary-disk limit
├── BlockedAddressError        a fetch refused by the SSRF guard (private/loopback/metadata address)
│   └── InvalidURLError        a URL the guard cannot vet (a malformed port)
├── FetchError [udm.net.fetching]  a fetch that failed (carries transient, retry_after, status_code, url)
├── GraphError                 the knowledge graph cannot answer
│   ├── GraphQueryError        an invalid or unsupported query (bad syntax, unknown language, write attempt)
│   ├── GraphTimeoutError      a query stopped at its time limit (the process stays healthy)
│   ├── GraphCycleError        dependencies form a cycle, so there is no order (carries `cycle`)
│   ├── GraphUnavailableError  the graph's store or query engine cannot be opened or started
│   └── CacheInvalid [udm.graph.cache]  a graph cache that cannot be used (also a ValueError; rebuilt)
├── DaemonError                the per-manual daemon cannot serve
│   ├── DaemonUnavailable [udm.daemon.client]  no daemon answered (none runs, stale socket, timeout)
│   ├── ProtocolError [udm.daemon.client]  a message that breaks the framing
│   └── AlreadyRunning [udm.daemon.server]  another daemon holds this state folder
├── ToolError                  raised by the tools layer (tasks/)
│   ├── ToolStatusError        an expected failure that names the status its tool reports
│   │   └── ActionError [tasks.browser.actions]  a browser action's failure
│   ├── TransientToolError [tasks.failures]  worth retrying; carries the error Output for the last try
│   ├── ToolFailedError [tasks.prefect_task]  a tool task's call that failed for good (fails the run)
│   ├── ApprovalUnavailableError [tasks.approval]  approval needed and nobody to ask
│   ├── LLMError [tasks.llm_synth]  the LLM endpoint gave no usable answer
│   ├── PipelineCheckError [tasks.pipeline_spec]  a pipeline spec that cannot run (also a ValueError)
│   └── ExpressionError [tasks.pipeline_expr]  a pipeline expression that cannot be parsed (also a ValueError)
└── FlowError                  raised by the flows layer (flows/)
    ├── ApprovalExpiredError [flows.approval]  nobody answered an approval before its deadline
    ├── AppendixCheckError [flows.research_report]  a report appendix that does not parse back
    └── PipelineRunError [flows.pipeline]  a pipeline run in which a step failed (also a RuntimeError)
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # the daemon client imports this module on the CLI's fast path: keep it bare
    from typing import Any

__all__ = [
    "AmbiguousTargetError",
    "BlockedAddressError",
    "ConfigError",
    "ConflictError",
    "DaemonError",
    "DocumentError",
    "FlowError",
    "GraphCycleError",
    "GraphError",
    "GraphQueryError",
    "GraphTimeoutError",
    "GraphUnavailableError",
    "IndexBusyError",
    "InvalidPathError",
    "InvalidURLError",
    "LockTimeoutError",
    "PatchError",
    "PathChangedError",
    "PathOutsideError",
    "PathProtectedError",
    "SqlMemoryError",
    "SqlQueryFailedError",
    "SqlRefusedError",
    "SqlTimeoutError",
    "TargetError",
    "TargetNotFoundError",
    "ToolError",
    "ToolStatusError",
    "TransactionError",
    "UdmError",
]


class UdmError(Exception):
    """Base of every error the engine raises on purpose."""


class ConfigError(UdmError):
    """Settings that cannot be used."""


class PathOutsideError(UdmError):
    """A path that escapes every allowed directory."""


class PathProtectedError(PathOutsideError):
    """A path inside a protected folder (the engine's state): the tools may neither read nor write it."""


class InvalidPathError(UdmError):
    """A path that can never be used: a NUL byte, undecodable bytes, over-long, or not a file/directory."""


class PathChangedError(UdmError):
    """A path changed (e.g. a directory swapped for a symlink) between its check and its use."""


class DocumentError(UdmError):
    """A file that cannot be read or parsed."""


class TargetError(UdmError):
    """A section, block or key that cannot be resolved."""


class TargetNotFoundError(TargetError):
    """Nothing matched the target."""


class AmbiguousTargetError(TargetError):
    """More than one thing matched the target; `candidates` lists them."""

    def __init__(self, message: str, candidates: list[str]) -> None:
        super().__init__(message)
        self.candidates = candidates


class PatchError(UdmError):
    """An invalid patch, or an operation that cannot apply."""


class ConflictError(PatchError):
    """The files moved on since the patch was planned."""


class TransactionError(UdmError):
    """The commit protocol failed."""


class LockTimeoutError(TransactionError):
    """Another writer held the lock past the bounded wait."""


class IndexBusyError(UdmError):
    """The index stayed locked by another process past the bounded wait."""


class SqlRefusedError(UdmError):
    """A statement that is not a single SELECT/WITH query."""


class SqlQueryFailedError(SqlRefusedError):
    """A read-only query that failed while it ran (or the worker running it did); its text says why."""


class SqlTimeoutError(UdmError):
    """A query that ran past its time limit and was interrupted."""


class SqlMemoryError(UdmError):
    """A query that needed more memory or temporary disk than its limits."""


class BlockedAddressError(UdmError):
    """A network address the SSRF guard refuses (loopback, private, metadata ...) or cannot resolve."""


class InvalidURLError(BlockedAddressError):
    """A URL the guard cannot vet because it is malformed (a port that is not a number in 0-65535)."""


class GraphError(UdmError):
    """The knowledge graph cannot answer."""


class GraphQueryError(GraphError):
    """An invalid or unsupported knowledge-graph query."""


class GraphTimeoutError(GraphError):
    """A knowledge-graph query was stopped at its time limit."""


class GraphCycleError(GraphError):
    """Dependencies form a cycle, so they have no topological order; `cycle` is one of them."""

    def __init__(self, message: str, cycle: list[str]) -> None:
        super().__init__(message)
        self.cycle = cycle


class GraphUnavailableError(GraphError):
    """The graph's store or query engine cannot be opened or started."""


class DaemonError(UdmError):
    """The per-manual daemon cannot serve (the CLI then does the work itself)."""


class ToolError(UdmError):
    """Base of the errors the tools layer (tasks/) raises on purpose."""


class ToolStatusError(ToolError):
    """An expected failure that names the status its tool reports; `call_tool` turns it into the Output.

    `transient` failures raise inside a Prefect task so its retries apply (honouring `retry_after`)."""

    def __init__(
        self, status: str, message: str, *, transient: bool = False, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = str(getattr(status, "value", status))
        self.message = message
        self.transient = transient
        self.retry_after = retry_after

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle by the constructor's arguments: a task run on a Dask worker sends it back."""
        return (_rebuild, (type(self), self.status, self.message, self.transient, self.retry_after))


def _rebuild(
    cls: type[ToolStatusError], status: str, message: str, transient: bool, retry_after: float | None
) -> ToolStatusError:
    exc = cls.__new__(cls)
    ToolStatusError.__init__(exc, status, message, transient=transient, retry_after=retry_after)
    return exc


class FlowError(UdmError):
    """Base of the errors the flows layer (flows/) raises on purpose."""
