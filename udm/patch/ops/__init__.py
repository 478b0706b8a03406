"""The patch operations: one table from each operation's name to the function that applies it.

Adding an operation is its model in `udm.patch.format` plus one entry here. A function takes the
workspace, the operation and an `ExpectCheck`; it finds its target, passes the target's hash to the
check before changing anything, edits the workspace, and returns a description of the target.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from udm.patch.ops.content import replace_code_block, replace_text, set_front_matter
from udm.patch.ops.files import create_file, delete_file, rename_file
from udm.patch.ops.keys import key_operation
from udm.patch.ops.sections import (
    append_to_section,
    delete_section,
    insert_section,
    move_section,
    prepend_to_section,
    rename_heading,
    replace_section,
)
from udm.patch.ops.targets import ExpectCheck
from udm.patch.workspace import Workspace

__all__ = ["OPERATIONS", "ExpectCheck", "OperationRule"]


@dataclass(frozen=True)
class OperationRule:
    """How one operation is applied."""

    # Applies the operation to the workspace; returns the target's description.
    run: Callable[[Workspace, Any, ExpectCheck], str]
    # The operation makes a new file: its file is not read before it runs, and it always counts as applied.
    new_file: bool = False


OPERATIONS: dict[str, OperationRule] = {
    "replace_section": OperationRule(replace_section),
    "append_to_section": OperationRule(append_to_section),
    "prepend_to_section": OperationRule(prepend_to_section),
    "insert_section": OperationRule(insert_section),
    "delete_section": OperationRule(delete_section),
    "rename_heading": OperationRule(rename_heading),
    "move_section": OperationRule(move_section),
    "replace_text": OperationRule(replace_text),
    "set_yaml_key": OperationRule(key_operation("set", "yaml")),
    "delete_yaml_key": OperationRule(key_operation("delete", "yaml")),
    "append_yaml_item": OperationRule(key_operation("append", "yaml")),
    "set_json_key": OperationRule(key_operation("set", "json")),
    "delete_json_key": OperationRule(key_operation("delete", "json")),
    "append_json_item": OperationRule(key_operation("append", "json")),
    "set_front_matter": OperationRule(set_front_matter),
    "replace_code_block": OperationRule(replace_code_block),
    "create_file": OperationRule(create_file, new_file=True),
    "rename_file": OperationRule(rename_file),
    "delete_file": OperationRule(delete_file),
}
