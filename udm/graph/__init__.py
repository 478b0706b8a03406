"""The knowledge graph of the manual: model, facts, cache, operations, Cypher, SPARQL and plain-English questions.

The names in `__all__` are the package's public surface: code outside the package imports them from
here. They load on first use, so importing the package stays cheap for the CLI's fast paths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from udm._lazy import load_surface_name

if TYPE_CHECKING:
    from udm.graph.cypher import QueryResult as QueryResult
    from udm.graph.nl import translate as translate
    from udm.graph.ops import export_graph as export_graph
    from udm.graph.ops import neighbourhood as neighbourhood
    from udm.graph.ops import require_node as require_node
    from udm.graph.ops import to_mermaid as to_mermaid
    from udm.graph.store import open_graph as open_graph
    from udm.graph.store import run_operation as run_operation

_SURFACE = {
    "QueryResult": "cypher",
    "export_graph": "ops",
    "neighbourhood": "ops",
    "open_graph": "store",
    "require_node": "ops",
    "run_operation": "store",
    "to_mermaid": "ops",
    "translate": "nl",
}

__all__ = [
    "QueryResult",
    "export_graph",
    "neighbourhood",
    "open_graph",
    "require_node",
    "run_operation",
    "to_mermaid",
    "translate",
]


def __getattr__(name: str) -> object:
    """A surface name, imported from its module on first use."""
    return load_surface_name(__name__, _SURFACE, name)
