"""The README's layout map names every product file and test folder, and nothing that is gone.

The map (the code block under "## Layout") has one line per entry: its path (a folder ends with `/`),
then what it is. Indentation is two spaces per level: an entry belongs to the folder line above it
with one level less. A line indented further than one level past the entry above continues that
entry's description. A top-level entry may be a path (`examples/udm/`).
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PRODUCT = ("flows", "tasks", "udm", "wiring")


def layout_block(text: str) -> list[str]:
    """The lines of the code block under the README's "## Layout" heading."""
    match = re.search(r"^## Layout\n.*?^```\n(.*?)^```", text, re.S | re.M)
    assert match, 'README.md has no "## Layout" section with a code block'
    return match.group(1).splitlines()


def map_entries(lines: list[str]) -> list[str]:
    """Every path the map names, relative to the repository (folders end with `/`)."""
    folders: list[tuple[int, str]] = []  # (indent, path) of the folder lines enclosing this line
    entries: list[str] = []
    last = -2
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent > last + 2:
            continue  # a description carried on from the line above
        while folders and folders[-1][0] >= indent:
            folders.pop()
        expected = folders[-1][0] + 2 if folders else 0
        if indent != expected:
            raise AssertionError(f"layout map line {number} is indented under a file: {line.strip()!r}")
        path = (folders[-1][1] if folders else "") + line.split()[0]
        entries.append(path)
        if path.endswith("/"):
            folders.append((indent, path))
        last = indent
    return entries


def tracked_files() -> list[str]:
    """The repository's files: tracked, plus new ones git does not ignore."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [f for f in out.splitlines() if (REPO / f).exists()]


def required_entries(files: list[str]) -> set[str]:
    """What the map must name: top-level entries, product modules and folders, benchmarks, test folders,
    example folders."""
    required: set[str] = set()
    for file in files:
        parts = file.split("/")
        if parts[0].startswith(".") or parts[0] == "README.md":
            continue
        required.add(parts[0] + ("/" if len(parts) > 1 else ""))
        if parts[0] in PRODUCT and file.endswith(".py"):
            required.update("/".join(parts[:i]) + "/" for i in range(2, len(parts)))
            if parts[-1] != "__init__.py":
                required.add(file)
        elif parts[0] == "benchmarks" and len(parts) == 2 and file.endswith(".py"):
            required.add(file)
        elif parts[0] == "tests" and len(parts) > 2 and file.endswith(".py"):
            required.update("/".join(parts[:i]) + "/" for i in range(2, len(parts)))
        elif parts[0] == "examples" and len(parts) > 2:
            required.add(f"examples/{parts[1]}/")
    return required


def suggestion(path: str) -> str:
    """Where a missing entry goes and a line for it: its name and its module docstring's first line."""
    doc = ""
    if path.endswith(".py"):
        doc = ast.get_docstring(ast.parse((REPO / path).read_text(encoding="utf-8"))) or ""
    folder, _, name = path.rstrip("/").rpartition("/")
    name += "/" if path.endswith("/") else ""
    where = f"under {folder}/" if folder else "at the top"
    indent = "  " * (folder.count("/") + 1 if folder else 0)
    return f"  {where}: {indent}{name:<{max(20 - len(indent), len(name) + 1)}}{doc.splitlines()[0] if doc else ''}"


def test_the_layout_map_matches_the_tree() -> None:
    try:
        files = tracked_files()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    named = map_entries(layout_block((REPO / "README.md").read_text(encoding="utf-8")))
    duplicates = sorted({p for p in named if named.count(p) > 1})
    assert not duplicates, f"the layout map names these twice: {duplicates}"
    gone = [p for p in named if not (REPO / p).exists() or (REPO / p).is_dir() != p.endswith("/")]
    assert not gone, f"the README's layout map names what is not in the tree: {gone}"
    # A path names its folders too: `examples/udm/` names `examples/`.
    named_or_above = {"/".join(p.split("/")[:i]) + "/" for p in named for i in range(1, p.count("/") + 1)}
    missing = sorted(required_entries(files) - set(named) - named_or_above)
    assert not missing, (
        "the README's layout map misses these; add one line each under its folder (two spaces per level):\n"
        + "\n".join(suggestion(p) for p in missing)
    )


def test_the_map_reader() -> None:
    lines = [
        "run                   the commands",
        "udm/                  the engine",
        "  index/              the index",
        "    core.py           UdmIndex",
        "                      and a description carried on",
        "  config.py           settings",
        "examples/udm/         the sample",
    ]
    assert map_entries(lines) == [
        "run",
        "udm/",
        "udm/index/",
        "udm/index/core.py",
        "udm/config.py",
        "examples/udm/",
    ]
    with pytest.raises(AssertionError, match="indented under a file"):
        map_entries(["run                   the commands", "  core.py           x"])
    files = ["README.md", ".ci/run", "run", "udm/__init__.py", "udm/index/__init__.py", "udm/index/core.py"]
    files += [
        "tests/conftest.py",
        "tests/engine/test_x.py",
        "tests/patch/golden/op/input.md",
        "examples/udm/a.md",
    ]
    files += ["benchmarks/bench_x.py", "benchmarks/out/x.py", "udm/index/data.json"]
    assert required_entries(files) == {
        "run",
        "udm/",
        "udm/index/",
        "udm/index/core.py",
        "tests/",
        "tests/engine/",
        "examples/",
        "examples/udm/",
        "benchmarks/",
        "benchmarks/bench_x.py",
    }
