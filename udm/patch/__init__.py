"""Patches: the format, the operations, structured edits, validation, transactions, journal, apply/revert.

The names in `__all__` are the package's public surface: code outside the package imports them from
here. They load on first use, so importing the package stays cheap for the CLI's fast paths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from udm._lazy import load_surface_name

if TYPE_CHECKING:
    from udm.patch.apply import apply_operations as apply_operations
    from udm.patch.format import DESTRUCTIVE_OPS as DESTRUCTIVE_OPS
    from udm.patch.format import OperationType as OperationType
    from udm.patch.format import Override as Override
    from udm.patch.format import Patch as Patch
    from udm.patch.format import patch_json_schema as patch_json_schema
    from udm.patch.loading import load_patch as load_patch
    from udm.patch.loading import loads_patch as loads_patch
    from udm.patch.loading import parse_patch as parse_patch
    from udm.patch.reformat import format_files as format_files
    from udm.patch.results import FileResult as FileResult
    from udm.patch.results import OperationResult as OperationResult
    from udm.patch.results import PatchResult as PatchResult
    from udm.patch.revert import revert_patch as revert_patch
    from udm.patch.store import list_records as list_records
    from udm.patch.store import load_record as load_record
    from udm.patch.structured import SerializationError as SerializationError
    from udm.patch.structured import edit_text as edit_text
    from udm.patch.structured import get_value as get_value
    from udm.patch.updates import apply_patch as apply_patch
    from udm.patch.workspace import Workspace as Workspace
    from udm.patch.writer import recover_root as recover_root

_SURFACE = {
    "DESTRUCTIVE_OPS": "format",
    "FileResult": "results",
    "OperationResult": "results",
    "OperationType": "format",
    "Override": "format",
    "Patch": "format",
    "PatchResult": "results",
    "SerializationError": "structured",
    "Workspace": "workspace",
    "apply_operations": "apply",
    "apply_patch": "updates",
    "edit_text": "structured",
    "format_files": "reformat",
    "get_value": "structured",
    "list_records": "store",
    "load_patch": "loading",
    "loads_patch": "loading",
    "load_record": "store",
    "parse_patch": "loading",
    "patch_json_schema": "format",
    "recover_root": "writer",
    "revert_patch": "revert",
}

__all__ = [
    "DESTRUCTIVE_OPS",
    "FileResult",
    "OperationResult",
    "OperationType",
    "Override",
    "Patch",
    "PatchResult",
    "SerializationError",
    "Workspace",
    "apply_operations",
    "apply_patch",
    "edit_text",
    "format_files",
    "get_value",
    "list_records",
    "load_patch",
    "load_record",
    "loads_patch",
    "parse_patch",
    "patch_json_schema",
    "recover_root",
    "revert_patch",
]


def __getattr__(name: str) -> object:
    """A surface name, imported from its module on first use."""
    return load_surface_name(__name__, _SURFACE, name)
