"""Import hygiene: the CLI and tools never import Prefect; every module's __all__ is true; the layering
contracts (pyproject.toml [tool.importlinter], run by `./run test`) catch lazy imports too."""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("udm", "tasks", "flows", "wiring")

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


LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

# Lazy (function-level) imports that break one contract each, planted in a copy of the tree:
# (file, line appended, id of the contract that must catch it).
VIOLATIONS = [
    ("udm/errors.py", "def _planted():\n    import flows\n", "layers"),
    ("udm/config.py", "def _planted():\n    import prefect\n", "engine-without-prefect"),
    ("tasks/filesystem.py", "def _planted():\n    from prefect import flow\n", "tools-without-prefect"),
    ("tasks/udm_query.py", "def _planted():\n    import flows.cli\n", "layers"),
    ("flows/cli_tools.py", "def _planted():\n    from udm.index import core\n", "surface-index"),
    ("udm/markdown/lines.py", "def _planted():\n    from udm.index import UdmIndex\n", "udm-packages"),
    ("wiring/__init__.py", "def _planted():\n    import tasks.registry\n", "layers"),
]


def contracts() -> list[dict[str, object]]:
    """The import-linter contracts of pyproject.toml."""
    import tomllib

    with open(REPO / "pyproject.toml", "rb") as fh:
        found: list[dict[str, object]] = tomllib.load(fh)["tool"]["importlinter"]["contracts"]
    return found


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """Run lint-imports over the tree at `root` (no cache, so nothing is left behind)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(root)
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=120
    )


def copy_tree(dest: Path) -> Path:
    """The product packages and pyproject.toml, copied to dest."""
    import shutil

    for name in PACKAGES:
        shutil.copytree(REPO / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", dest / "pyproject.toml")
    return dest


def test_lazy_imports_that_break_the_layers_fail_lint_imports(tmp_path: Path) -> None:
    root = copy_tree(tmp_path)
    clean = lint_imports(root)
    assert clean.returncode == 0, clean.stdout[-3000:] + clean.stderr[-3000:]
    for file, code, _ in VIOLATIONS:
        with open(root / file, "a", encoding="utf-8") as fh:
            fh.write("\n\n" + code)
    broken = lint_imports(root)
    assert broken.returncode == 1, broken.stdout[-3000:] + broken.stderr[-3000:]
    names = {str(c["id"]): str(c["name"]) for c in contracts()}
    for file, code, contract in VIOLATIONS:
        # import-linter wraps long contract names; compare without the line breaks.
        report = " ".join(broken.stdout.split())
        assert f"{' '.join(names[contract].split())} BROKEN" in report, (file, contract)
        planted = code.splitlines()[1].strip()
        module = file.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        assert module in broken.stdout and planted.split()[1] in broken.stdout, (file, planted)


def test_every_udm_package_has_a_surface_contract_and_a_layer() -> None:
    by_id = {str(c["id"]): c for c in contracts()}
    packages = sorted(p.name for p in (REPO / "udm").iterdir() if (p / "__init__.py").is_file())
    modules = sorted(p.stem for p in (REPO / "udm").glob("*.py") if p.stem != "__init__")
    layers: list[str] = by_id["udm-packages"]["layers"]  # type: ignore[assignment]
    layered = {part.strip() for layer in layers for part in re.split(r"[|:]", layer)}
    for name in packages:
        contract = by_id.get(f"surface-{name}")
        assert contract is not None, f"udm/{name}/: add a surface-{name} contract to pyproject.toml"
        assert contract["type"] == "protected"
        assert contract["protected_modules"] == [f"udm.{name}.*"]
        assert contract["allowed_importers"] == [f"udm.{name}"]
    for name in packages + modules:
        # The layer order documents where each part of the engine sits: a new one takes its place.
        assert f"udm.{name}" in layered, f"place udm.{name} in the udm-packages contract's layers"
