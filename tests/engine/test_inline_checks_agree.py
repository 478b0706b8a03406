"""The ```verify blocks read from the files and from the index give the same checks and problems.

Both follow one rule (`udm.verify.spec._page_checks`): a section's IDs are its checks' default claims,
less the IDs of the checks on the same page. A check ID in another file does not hide a claim here.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from udm.config import Settings, load_settings
from udm.verify.model import Check, CheckProblem
from udm.verify.spec import inline_checks, inline_checks_from_index

POOL = ["COMP-001", "COMP-002", "REQ-7", "TEST-3"]


def _settings(root: Path) -> Settings:
    return load_settings(root.parent, root=root.name, state_dir="state", logs_dir="logs")


def _view(found: tuple[list[Check], list[CheckProblem]]) -> tuple[list[Any], list[CheckProblem]]:
    checks, problems = found
    rows = sorted((c.id, c.source or "", c.section or "", tuple(c.udm_refs)) for c in checks)
    return rows, sorted(problems, key=lambda p: (p.source, p.message))


def _both(root: Path) -> tuple[tuple[list[Any], list[CheckProblem]], tuple[list[Any], list[CheckProblem]]]:
    cfg = _settings(root)
    return _view(inline_checks(cfg)), _view(inline_checks_from_index(cfg))


def test_a_check_id_in_another_file_does_not_hide_a_claim(tmp_path: Path) -> None:
    """login.md claims COMP-001; audit.md names one of its checks COMP-001: the claim stays a claim."""
    root = tmp_path / "udm"
    root.mkdir()
    (root / "login.md").write_text(
        "# Login\n\n## Sign in\n\n-   **ID:** `COMP-001`\n\n```verify\nurl: /login\n```\n", encoding="utf-8"
    )
    (root / "audit.md").write_text("# Audit\n\n```verify\nid: COMP-001\nurl: /audit\n```\n", encoding="utf-8")
    from_files, from_index = _both(root)
    assert from_files == from_index
    checks = {row[0]: row[3] for row in from_index[0]}
    assert checks["CHK-login-7-1"] == ("COMP-001",)
    assert checks["COMP-001"] == ("audit.md#audit",)


def test_a_check_id_on_the_same_page_is_not_a_claim(tmp_path: Path) -> None:
    """A check written in the section that shows its own ID: that ID is the check's, not a claim."""
    root = tmp_path / "udm"
    root.mkdir()
    (root / "page.md").write_text(
        "# Page\n\n## Part\n\n-   **ID:** `REQ-7`\n\n```verify\nid: TEST-3\nurl: /p\n```\n", encoding="utf-8"
    )
    from_files, from_index = _both(root)
    assert from_files == from_index
    assert [row[3] for row in from_index[0]] == [("REQ-7",)]


_CHECK_ID = st.one_of(st.none(), st.sampled_from([*POOL, "CHK-X"]))
_SECTION = st.tuples(
    st.lists(st.sampled_from(POOL), max_size=2, unique=True), st.lists(_CHECK_ID, max_size=2)
)
_PAGE = st.lists(_SECTION, min_size=1, max_size=3)


def _page(n: int, sections: list[tuple[list[str], list[str | None]]]) -> str:
    out = [f"# Page {n}\n"]
    for k, (ids, checks) in enumerate(sections):
        out.append(f"\n## Part {k}\n\n")
        out += [f"-   **ID:** `{ident}`\n" for ident in ids]
        for j, check in enumerate(checks):
            named = f"id: {check}\n" if check else ""
            out.append(f"\n```verify\n{named}url: /p{n}-{k}-{j}\n```\n")
    return "".join(out)


@settings(max_examples=25, deadline=None)
@given(pages=st.lists(_PAGE, min_size=1, max_size=3), latin=st.booleans())
def test_files_and_index_give_the_same_checks_and_problems(
    pages: list[list[tuple[list[str], list[str | None]]]], latin: bool
) -> None:
    workspace = Path(tempfile.mkdtemp(prefix="udm-inline-"))
    try:
        root = workspace / "udm"
        root.mkdir()
        for n, sections in enumerate(pages):
            (root / f"p{n}.md").write_text(_page(n, sections), encoding="utf-8")
        if latin:
            (root / "legacy.md").write_bytes(b"# Caf\xe9\n\n```verify\nurl: /x\n```\n")
        from_files, from_index = _both(root)
        assert from_files == from_index
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
