"""Research without Prefect: passages, ranking, and the cited synthesis with its checks.

The names in `__all__` are the package's public surface: code outside the package imports them from
here. They load on first use, so importing the package stays cheap for the CLI's fast paths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from udm._lazy import load_surface_name

if TYPE_CHECKING:
    from udm.research.passages import rank_passages as rank_passages
    from udm.research.passages import split_passages as split_passages
    from udm.research.passages import terms as terms
    from udm.research.synthesis import Claim as Claim
    from udm.research.synthesis import Evidence as Evidence
    from udm.research.synthesis import ExtractiveSynthesizer as ExtractiveSynthesizer
    from udm.research.synthesis import Synthesis as Synthesis
    from udm.research.synthesis import Synthesizer as Synthesizer
    from udm.research.synthesis import comparable as comparable
    from udm.research.synthesis import split_sub_questions as split_sub_questions
    from udm.research.synthesis import verify_claims as verify_claims

_SURFACE = {
    "Claim": "synthesis",
    "Evidence": "synthesis",
    "ExtractiveSynthesizer": "synthesis",
    "Synthesis": "synthesis",
    "Synthesizer": "synthesis",
    "comparable": "synthesis",
    "rank_passages": "passages",
    "split_passages": "passages",
    "split_sub_questions": "synthesis",
    "terms": "passages",
    "verify_claims": "synthesis",
}

__all__ = [
    "Claim",
    "Evidence",
    "ExtractiveSynthesizer",
    "Synthesis",
    "Synthesizer",
    "comparable",
    "rank_passages",
    "split_passages",
    "split_sub_questions",
    "terms",
    "verify_claims",
]


def __getattr__(name: str) -> object:
    """A surface name, imported from its module on first use."""
    return load_surface_name(__name__, _SURFACE, name)
