"""A ```verify block in the manual cannot write or read a baseline outside the allowed directories.

The manual is untrusted input: on `main` before this, an inline check's `screenshot.baseline` was
joined to the page's folder and, when missing, created with `mkdir(parents=True)` and written, so
`baseline: ../../outside/new/x.png` (or an absolute path, or one into `state/`) made folders and a
file anywhere the user can write; an existing path of any kind (a FIFO) was opened as an image.
Inline baselines now go through the tools' sandbox (allowed roots, state and `.git` protected,
symlinks checked); spec files an operator names keep their own folder.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tasks.browser.verify import run_checks_sync
from udm.markdown import parse_document
from udm.verify.spec import inline_checks


def _tree(base: Path, state: Path) -> list[Path]:
    """Every path under `base`, leaving out what the engine itself keeps in its state (not `state/graph`)."""
    keep = state / "graph"
    return sorted(p for p in base.rglob("*") if not p.is_relative_to(state) or p.is_relative_to(keep))


def _page(baseline: str) -> str:
    return f"""# Manual

## Box

```verify
id: CHK-BOX
url: /visual?color=navy
expect: [{{screenshot: {{baseline: "{baseline}", maxVariation: 0.01}}}}]
```
"""


@pytest.mark.parametrize(
    "baseline",
    [
        "../../outside/new/x.png",
        "{tmp}/outside/abs.png",
        "../../state/graph/x.png",
        ".git/x.png",
        "link/x.png",
    ],
)
def test_an_inline_baseline_stays_inside_the_allowed_directories(
    site: str, bctx, tmp_path: Path, baseline: str
) -> None:  # type: ignore[no-untyped-def]
    settings = bctx.settings
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", settings.udm_root / "link")
    settings.state_path.mkdir(exist_ok=True)
    settings.scratch_path.mkdir(exist_ok=True)
    before = _tree(tmp_path, settings.state_path)
    checks, problems = inline_checks(settings, [parse_document(_page(baseline.format(tmp=tmp_path)), "m.md")])
    assert not problems and len(checks) == 1
    result = run_checks_sync(checks, settings, base_url=site)[0]
    after = _tree(tmp_path, settings.state_path)
    assert after == before, "a baseline was written outside the allowed directories"
    assert result.status in ("FAIL", "ERROR"), result
    assert "baseline" in (result.reason or ""), result


def test_an_inline_baseline_that_is_a_fifo_does_not_hang(site: str, bctx) -> None:  # type: ignore[no-untyped-def]
    settings = bctx.settings
    os.mkfifo(settings.udm_root / "box.png")
    checks, _ = inline_checks(settings, [parse_document(_page("box.png"), "m.md")])
    result = run_checks_sync(checks, settings, base_url=site)[0]
    assert result.status in ("FAIL", "ERROR") and "baseline" in (result.reason or ""), result


def test_an_inline_baseline_inside_the_manual_still_works(site: str, bctx) -> None:  # type: ignore[no-untyped-def]
    settings = bctx.settings
    checks, _ = inline_checks(settings, [parse_document(_page("baselines/box.png"), "m.md")])
    first = run_checks_sync(checks, settings, base_url=site)[0]
    assert first.status == "WARNING" and "no baseline yet" in (first.reason or ""), first
    assert (settings.udm_root / "baselines" / "box.png").is_file()
    again = run_checks_sync(checks, settings, base_url=site)[0]
    assert again.status == "PASS", again
