"""The one error tree: the drawing in udm/errors.py's docstring is the real class tree, and it is complete."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import udm.errors
from udm.errors import UdmError

ROOT = Path(__file__).resolve().parents[2]
_NODE = re.compile(r"^(?P<indent>(?:[│ ] {3})*)(?:├── |└── )(?P<name>\w+)(?: \[(?P<module>[\w.]+)\])?")
# Builtin bases a class of ours may carry besides its tree parent (kept so `except ValueError` still works).
_BUILTIN_BASES = {
    "Exception",
    "ValueError",
    "RuntimeError",
    "OSError",
    "KeyError",
    "TypeError",
    "LookupError",
}


def _drawn() -> dict[str, tuple[str, str]]:
    """name -> (parent name, defining module), read from the docstring's drawing."""
    doc = udm.errors.__doc__ or ""
    lines = doc[doc.index("\nUdmError\n") + 1 :].splitlines()
    assert lines[0] == "UdmError"
    stack = ["UdmError"]
    nodes: dict[str, tuple[str, str]] = {}
    for line in lines[1:]:
        match = _NODE.match(line)
        if match is None:
            break
        depth = len(match["indent"]) // 4
        del stack[depth + 1 :]
        name = match["name"]
        assert name not in nodes, f"{name} is drawn twice"
        nodes[name] = (stack[depth], match["module"] or "udm.errors")
        stack.append(name)
    return nodes


DRAWN = _drawn()


def test_the_drawing_has_every_branch() -> None:
    """The tree names the engine's, the tools' and the flows' branches."""
    assert {"ToolError", "FlowError", "DaemonError", "ToolStatusError"} <= set(DRAWN)
    assert len(DRAWN) > 40


@pytest.mark.parametrize("name", sorted(DRAWN))
def test_each_drawn_class_has_its_drawn_parent_and_module(name: str) -> None:
    """Drawn parent = a direct base; drawn module = where the class is defined (importable there)."""
    parent, module = DRAWN[name]
    cls = getattr(importlib.import_module(module), name)
    assert cls.__module__ == module, (
        f"{name} is defined in {cls.__module__}: draw it as {name} [{cls.__module__}]"
    )
    parent_cls = getattr(udm.errors, parent, None) or getattr(
        importlib.import_module(DRAWN[parent][1]), parent
    )
    assert parent_cls in cls.__bases__, f"{name}'s bases are {cls.__bases__}, drawn under {parent}"
    assert issubclass(cls, UdmError)
    extra = {b.__name__ for b in cls.__bases__} - {parent}
    assert extra <= _BUILTIN_BASES, f"{name} has undrawn bases {extra}"


def _public_exception_classes() -> list[tuple[str, str]]:
    """(file, class) for every public class in udm/, tasks/, flows/ that derives from an exception."""
    known = set(DRAWN) | {"UdmError"} | _BUILTIN_BASES
    found = []
    for folder in ("udm", "tasks", "flows"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if not isinstance(node, ast.ClassDef) or node.name.startswith("_"):
                    continue
                bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
                if bases & known or node.name.endswith(("Error", "Exception")):
                    found.append((str(path.relative_to(ROOT)), node.name))
    return found


def test_every_public_exception_class_is_in_the_tree() -> None:
    """A new public error class anywhere above or in the engine must be drawn (and so be a UdmError)."""
    missing = [
        f"{file}: {name}"
        for file, name in _public_exception_classes()
        if name not in DRAWN and name != "UdmError"
    ]
    assert not missing, "public exception classes missing from udm/errors.py's tree:\n" + "\n".join(missing)
    assert len(_public_exception_classes()) >= len(DRAWN) - 4  # the branch roots have no subclass check


def test_former_builtin_errors_are_still_caught_as_before() -> None:
    """Classes that were a ValueError/RuntimeError still are, so `except ValueError` callers keep working."""
    from flows.pipeline import PipelineRunError
    from tasks.pipeline_spec import ExpressionError, PipelineCheckError
    from udm.graph.cache import CacheInvalid

    assert issubclass(PipelineCheckError, ValueError)
    assert issubclass(ExpressionError, ValueError)
    assert issubclass(CacheInvalid, ValueError)
    assert issubclass(PipelineRunError, RuntimeError)


def test_errors_carrying_data_pickle_with_it() -> None:
    """Errors that cross a Dask worker boundary come back whole."""
    import pickle

    from tasks.browser.session import ActionError
    from udm.errors import ToolStatusError

    for exc in (
        ToolStatusError("ERROR_X", "went wrong", transient=True, retry_after=2.0),
        ActionError("ERROR_NO_PAGE", "no page", True),
    ):
        back = pickle.loads(pickle.dumps(exc))
        assert type(back) is type(exc)
        assert (back.status, back.message, back.transient, back.retry_after, str(back)) == (
            exc.status,
            exc.message,
            exc.transient,
            exc.retry_after,
            str(exc),
        )
