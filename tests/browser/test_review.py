"""The needs-review patch: built from failing checks, idempotent, and applied only after approval."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest

from udm.config import load_settings
from udm.index import get_query
from udm.patch import apply_patch
from udm.verify import needs_review_patch
from udm.verify.review import review_marker

RESULTS: list[dict[str, Any]] = [
    {
        "id": "CHK-A",
        "status": "FAIL",
        "udm_refs": ["COMP-003", "02-system-architecture.md#nope", "NOPE-999"],
        "reason": "expect[1] text of 'h1' was 'B',\n not 'A'",
    },
    {"id": "CHK-B", "status": "PASS", "udm_refs": ["COMP-001"]},
    {"id": "CHK-C", "status": "WARNING", "udm_refs": ["05-roadmap.md"], "reason": "visual variation 3%"},
    {"id": "CHK-D", "status": "SKIPPED", "udm_refs": ["COMP-002"], "reason": "no base URL"},
]


def test_patch_marks_each_failing_claim_once_and_reports_what_it_cannot_place(workspace: Path) -> None:
    settings = load_settings(cwd=workspace)
    query = get_query(settings)
    before = (settings.udm_root / "02-system-architecture.md").read_text(encoding="utf-8")
    proposal = needs_review_patch(query, RESULTS, "run-7", today=date(2026, 11, 22))
    assert [(t["check"], t["file"]) for t in proposal.targets] == [
        ("CHK-A", "02-system-architecture.md"),
        ("CHK-C", "05-roadmap.md"),
    ]
    assert len(proposal.unresolved) == 2
    assert any("#nope" in p for p in proposal.unresolved) and any(
        "NOPE-999" in p for p in proposal.unresolved
    )
    assert proposal.patch is not None and not proposal.patch.destructive
    assert proposal.patch.source == "run-7"

    result = apply_patch(proposal.patch, settings)
    assert result.committed, result.error
    after = (settings.udm_root / "02-system-architecture.md").read_text(encoding="utf-8")
    note = f"> {review_marker('CHK-A')} FAIL on 2026-11-22 (verification run `run-7`): expect[1] text of 'h1' was 'B', not 'A'"
    assert note in after
    # The note lands at the end of COMP-003's own section, before the next component's heading.
    assert after.index(note) < after.index("2.2.4 Component: Search Index")
    assert after.index(note) > after.index("2.2.3 Component: Ingestion Pipeline")
    added = [line for line in after.splitlines() if line not in before.splitlines()]
    assert added == ["> [!WARNING]", note]
    assert f"{review_marker('CHK-C')} WARNING" in (settings.udm_root / "05-roadmap.md").read_text(
        encoding="utf-8"
    )

    again = needs_review_patch(query, RESULTS, "run-8")
    assert again.patch is None and len(again.already_marked) == 2


@pytest.mark.browser
@pytest.mark.prefect
def test_flow_proposes_the_patch_and_writes_only_after_approval(
    prefect_server: None,
    site: str,
    workspace: Path,
    tmp_path: Path,
    reviewer: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from flows.browser_verify import browser_verification_flow

    monkeypatch.setenv("UDM_FETCH_ALLOW", "127.0.0.1")  # the loopback test site, for the browser's guard

    settings = load_settings(cwd=workspace)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "checks:\n  - {id: CHK-RV, udm_refs: [COMP-003], url: /b, timeout: 1, expect: [{text: {selector: h1, equals: Nope}}]}\n",
        encoding="utf-8",
    )
    while_paused: list[str] = []

    def read_while_paused() -> None:
        # Nothing is written while the run waits for the reviewer.
        while_paused.append((settings.udm_root / "02-system-architecture.md").read_text(encoding="utf-8"))

    thread, _seen = reviewer({"approve": True, "reviewer": "ann"}, on_paused=read_while_paused)
    state = browser_verification_flow(
        specs=[str(spec)],
        inline=False,
        base_url=site,
        artifacts=False,
        propose_review=True,
        review_timeout_s=60,
        review_poll_interval_s=1,
        root=str(settings.udm_root),
        state_dir=str(settings.state_path),
        return_state=True,
    )
    # A failing check fails the run; the summary is still its data.
    assert state.is_failed() and "1 check(s) failed" in (state.message or "")
    summary = state.result(raise_on_failure=False)
    thread.join(5)
    assert summary["counts"]["FAIL"] == 1
    review = summary["review"]
    assert review["update"]["status"] == "committed", review
    assert review["update"]["approval"]["reviewer"] == "ann"
    assert while_paused and all(review_marker("CHK-RV") not in text for text in while_paused)
    text = (settings.udm_root / "02-system-architecture.md").read_text(encoding="utf-8")
    assert f"{review_marker('CHK-RV')} FAIL" in text


@pytest.mark.browser
def test_cli_writes_the_review_patch_that_patch_check_accepts(
    site: str,
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from flows.cli import run

    monkeypatch.chdir(workspace)
    monkeypatch.setenv("UDM_FETCH_ALLOW", "127.0.0.1")
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "checks:\n  - {id: CHK-CLI, udm_refs: [COMP-003], url: /b, timeout: 1, expect: [{title: Not this}]}\n",
        encoding="utf-8",
    )
    out = tmp_path / "review.yaml"
    assert run(["verify", str(spec), "--no-inline", "--base-url", site, "--review-patch", str(out)]) == 1
    assert "udm patch apply" in capsys.readouterr().err
    assert run(["patch", "check", str(out)]) == 0
    assert "needs-review**: browser check `CHK-CLI`" in capsys.readouterr().out
    assert run(["verify", str(spec), "--propose-review"]) == 2  # needs --flow: approval lives in the UI
