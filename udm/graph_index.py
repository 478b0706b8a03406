"""The graph's source of facts: the manual's files under the UDM root, fingerprinted by content hash."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING

from udm.config import Settings
from udm.document import load_document
from udm.graph_model import GRAPH_SCHEMA_VERSION, GraphRows
from udm.graph_source import rows_from_documents

if TYPE_CHECKING:
    from udm.graph import GraphSource

__all__ = ["documents_source", "index_source"]


def _markdown_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md") if p.is_file())


def documents_source(settings: Settings) -> GraphSource:
    """A source that parses the manual's Markdown files directly (no index needed)."""
    from udm.graph import GraphSource

    root = settings.udm_root
    pattern = re.compile("|".join(f"(?:{p})" for p in settings.id_patterns))

    def fingerprint() -> str:
        h = hashlib.sha256(GRAPH_SCHEMA_VERSION.encode())
        for rel in _markdown_files(root):
            digest = hashlib.sha256((root / rel).read_bytes()).hexdigest()
            h.update(f"{rel}\0{digest}\n".encode())
        return h.hexdigest()[:20]

    def rows() -> GraphRows:
        docs = [load_document(root, rel, settings.id_patterns) for rel in _markdown_files(root)]
        return rows_from_documents(docs, pattern)

    return GraphSource(fingerprint=fingerprint, rows=rows)


def index_source(settings: Settings) -> GraphSource:
    """The source the graph is built from by default."""
    return documents_source(settings)
