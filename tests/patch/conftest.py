"""Fixtures of the patch tests: a small UDM root with its settings, and a byte snapshot helper."""

from __future__ import annotations

from pathlib import Path

import pytest

from udm.config import Settings, load_settings

SMALL_DOC = """# Roadmap

Intro text with a [link](#phase-1) and [config](config.md#http).

## Phase 1

### TASK-1: First task

- **ID:** `TASK-P0-M0.1-T001`

```yaml
# the task's data
id: TASK-P0-M0.1-T001
title: "First task"
status: todo   # keep this comment
depends_on:
  - TASK-P0-M0.1-T002
```

### TASK-2: Second task

Body of the second task.

```json
{
  "id": "TASK-P0-M0.1-T002",
  "status": "todo",
  "tags": ["a", "b"]
}
```

## Phase 2

Closing words.
"""

CONFIG_DOC = """# Config

## HTTP

```yaml udm
http:
  timeout: 10
  retries: 3
```
"""


def make_root(base: Path) -> Settings:
    """A project with docs/udm holding roadmap.md and config.md, plus state/ and logs/."""
    root = base / "docs" / "udm"
    root.mkdir(parents=True)
    (root / "roadmap.md").write_text(SMALL_DOC, encoding="utf-8")
    (root / "config.md").write_text(CONFIG_DOC, encoding="utf-8")
    for sub in ("state", "logs"):
        (base / sub).mkdir()
    return load_settings(cwd=base)


def snapshot(*folders: Path) -> dict[str, bytes]:
    """Every file's bytes under the folders (symlinks as their target text)."""
    out: dict[str, bytes] = {}
    for folder in folders:
        for p in sorted(folder.rglob("*")):
            if p.is_symlink():
                out[str(p)] = b"->" + str(p.readlink()).encode()
            elif p.is_file():
                out[str(p)] = p.read_bytes()
    return out


@pytest.fixture
def small(tmp_path: Path) -> Settings:
    """Settings over a small two-file UDM in tmp_path."""
    return make_root(tmp_path)
