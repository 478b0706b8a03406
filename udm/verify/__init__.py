"""Verification specs (checks and expectations), their recorded results, and the needs-review patch.

The names in `__all__` are the package's public surface: code outside the package imports them from
here. They load on first use, so importing the package stays cheap for the CLI's fast paths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from udm._lazy import load_surface_name

if TYPE_CHECKING:
    from udm.verify.model import Check as Check
    from udm.verify.model import CheckProblem as CheckProblem
    from udm.verify.model import Expectation as Expectation
    from udm.verify.model import spec_json_schema as spec_json_schema
    from udm.verify.results import last_verified as last_verified
    from udm.verify.results import record_verifications as record_verifications
    from udm.verify.results import verification_history as verification_history
    from udm.verify.review import needs_review_patch as needs_review_patch
    from udm.verify.spec import gather_checks as gather_checks
    from udm.verify.spec import resolve_url as resolve_url
    from udm.verify.spec import substitute as substitute

_SURFACE = {
    "Check": "model",
    "CheckProblem": "model",
    "Expectation": "model",
    "gather_checks": "spec",
    "last_verified": "results",
    "needs_review_patch": "review",
    "record_verifications": "results",
    "resolve_url": "spec",
    "spec_json_schema": "model",
    "substitute": "spec",
    "verification_history": "results",
}

__all__ = [
    "Check",
    "CheckProblem",
    "Expectation",
    "gather_checks",
    "last_verified",
    "needs_review_patch",
    "record_verifications",
    "resolve_url",
    "spec_json_schema",
    "substitute",
    "verification_history",
]


def __getattr__(name: str) -> object:
    """A surface name, imported from its module on first use."""
    return load_surface_name(__name__, _SURFACE, name)
