"""Import hygiene: the CLI and tools never import Prefect; every module's __all__ is true."""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("udm", "tasks", "flows")

NO_PREFECT = """
import importlib.util, io, sys, contextlib
import flows.cli, tasks.registry
written = [p for p in tasks.registry.TOOL_PATHS
           if importlib.util.find_spec(p.partition(":")[0]) is not None]
tasks.registry.TOOL_PATHS[:] = written
tools = tasks.registry.all_tools()
with contextlib.redirect_stdout(io.StringIO()):
    assert flows.cli.run(["tools", "list"]) == 0
    assert flows.cli.run(["tools", "schema", "all", "--format", "mcp"]) == 0
    assert flows.cli.run(["config"]) == 0
heavy = sorted(m for m in sys.modules if m == "prefect" or m.startswith("prefect."))
print(len(tools), len(heavy), heavy[:3])
"""


def test_cli_and_tools_do_not_import_prefect(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UDM_")}
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run(
        [sys.executable, "-c", NO_PREFECT], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    n_tools, n_prefect, sample = proc.stdout.split(" ", 2)
    assert int(n_tools) >= 1
    assert int(n_prefect) == 0, f"Prefect imported by the CLI or a tool module: {sample}"


def all_modules() -> list[str]:
    """Every module of the three packages (the packages themselves included)."""
    names = list(PACKAGES)
    for pkg in PACKAGES:
        path = [str(REPO / pkg)]
        names += [
            m.name for m in pkgutil.walk_packages(path, prefix=f"{pkg}.") if not m.name.endswith("__main__")
        ]
    return sorted(names)


@pytest.mark.parametrize("name", all_modules())
def test_module_exports_exist(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    if exported is None:
        # Packages may stay empty; a module with code must say what it exports.
        is_package = hasattr(module, "__path__")
        assert is_package, f"{name} has no __all__"
        return
    assert len(exported) == len(set(exported)), f"{name}.__all__ lists a name twice"
    missing = [n for n in exported if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names what it does not define: {missing}"


# Module-level imports a layer may not make: (package, forbidden, exceptions).
LAYER_RULES = [
    ("udm", ("prefect", "tasks", "flows"), ()),
    ("tasks", ("prefect", "flows"), ("tasks.prefect_task",)),
]


@pytest.mark.parametrize(("layer", "forbidden", "exempt"), LAYER_RULES, ids=[r[0] for r in LAYER_RULES])
def test_layering(layer: str, forbidden: tuple[str, ...], exempt: tuple[str, ...]) -> None:
    offenders = []
    for name in all_modules():
        if name.partition(".")[0] != layer or name in exempt:
            continue
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None
        for line in Path(spec.origin).read_text(encoding="utf-8").splitlines():
            # Column-0 imports run at import time; indented ones are lazy (inside a function).
            for higher in forbidden:
                if line.startswith((f"import {higher}", f"from {higher}")):
                    offenders.append(f"{name}: {line}")
    assert not offenders, offenders
