"""The engine's exception tree; third-party errors are translated into it at one boundary.

UdmError
├── ConfigError            settings that cannot be used
├── PathOutsideError       a path that escapes every allowed directory
│   └── PathProtectedError a path inside the engine's own state, which no tool may touch
├── InvalidPathError       a path that can never be used: NUL byte, not UTF-8, too long, a device/FIFO
├── PathChangedError       a path that changed under an operation between its check and its use
├── DocumentError          a Markdown/YAML/JSON file that cannot be read or parsed
├── TargetError            a section, block or key that cannot be resolved
│   ├── TargetNotFoundError
│   └── AmbiguousTargetError   (carries the candidates)
├── PatchError             an invalid patch or an operation that cannot apply
│   └── ConflictError      the files moved on since the patch was planned
├── TransactionError       the commit protocol failed (journal, rename, recovery)
│   └── LockTimeoutError   another writer held the lock too long
├── IndexBusyError         the DuckDB index stayed locked past the bounded wait
├── BlockedAddressError    a fetch refused by the SSRF guard (private/loopback/metadata address)
└── GraphError             the knowledge graph cannot answer
    ├── GraphQueryError        an invalid or unsupported query (bad syntax, unknown language, write attempt)
    ├── GraphTimeoutError      a query stopped at its time limit (the process stays healthy)
    ├── GraphCycleError        dependencies form a cycle, so there is no order (carries `cycle`)
    └── GraphUnavailableError  the graph's store or query engine cannot be opened or started
"""

from __future__ import annotations

__all__ = [
    "AmbiguousTargetError",
    "BlockedAddressError",
    "ConfigError",
    "ConflictError",
    "DocumentError",
    "GraphCycleError",
    "GraphError",
    "GraphQueryError",
    "GraphTimeoutError",
    "GraphUnavailableError",
    "IndexBusyError",
    "InvalidPathError",
    "LockTimeoutError",
    "PatchError",
    "PathChangedError",
    "PathOutsideError",
    "PathProtectedError",
    "TargetError",
    "TargetNotFoundError",
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
