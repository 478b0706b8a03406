"""Verification specs, the check runner (visual baselines included), the flow and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from PIL import Image

from tasks.browser.verify import compare_images, run_checks_sync
from udm.config import load_settings
from udm.errors import DocumentError
from udm.markdown import parse_document
from udm.verify import Check, resolve_url, spec_json_schema
from udm.verify.spec import filter_checks, inline_checks, load_spec_file

pytestmark = pytest.mark.browser

ISSUE_EXAMPLE = """
checks:
  - id: CHK-SIGNIN
    udm_refs: [COMP-003]
    url: http://127.0.0.1:8000/login
    steps:
      - {tool: typeText, input: {selector_type: css, selector_value: "#user", text_to_type: ann}}
      - {tool: clickElement, input: {selector_type: css, selector_value: "button[type=submit]"}}
    expect:
      - {exists: "#welcome"}
      - {absent: ".error"}
      - {text: {selector: h1, contains: "Welcome"}}
      - {url: {contains: "/home"}}
      - {screenshot: {baseline: baselines/home.png, maxVariation: 0.02}}
"""


def _spec(tmp_path: Path, text: str, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_issue_example_validates_and_schema_is_published(tmp_path: Path) -> None:
    checks, problems, _ = load_spec_file(_spec(tmp_path, ISSUE_EXAMPLE))
    assert problems == [] and [c.id for c in checks] == ["CHK-SIGNIN"]
    check = checks[0]
    assert [e.kind for e in check.expect] == ["exists", "absent", "text", "url", "screenshot"]
    assert check.expect[4].screenshot and check.expect[4].screenshot.max_variation == 0.02
    assert check.base_dir == tmp_path
    schema = spec_json_schema()
    assert "checks" in schema["properties"] and "maxVariation" in json.dumps(schema)


def test_bad_checks_are_named_problems(tmp_path: Path) -> None:
    text = """checks:
  - {id: OK-1, url: /x}
  - {id: BAD-1, url: /x, expect: [{exists: a, absent: b}]}
  - {id: BAD-2, url: /x, expect: [{text: {selector: h1}}]}
  - {id: BAD-3}
"""
    checks, problems, _ = load_spec_file(_spec(tmp_path, text))
    assert [c.id for c in checks] == ["OK-1"]
    assert [p.source.split(" ")[-1] for p in problems] == ["(BAD-1)", "(BAD-2)", "(BAD-3)"]
    assert "exactly one of" in problems[0].message and "equals, contains, matches" in problems[1].message
    assert "url or steps" in problems[2].message
    with pytest.raises(DocumentError, match="checks"):
        load_spec_file(_spec(tmp_path, "just: text", "bad.yaml"))


def test_inline_blocks_default_to_their_section(tmp_path: Path) -> None:
    md = """# Manual

## 2.1 Component: Console

-   **ID:** `COMP-009`

```verify
id: CHK-ONE
url: ${BASE_URL}/a
expect: [{exists: h1}]
```

## 2.2 No IDs here

```verify
- {url: /b, udm_refs: [RM-001]}
- {url: /c}
```

```verify
id: BROKEN
expect: [{nope: 1}]
```
"""
    settings = load_settings(cwd=tmp_path)
    checks, problems = inline_checks(settings, [parse_document(md, "m.md")])
    by_id = {c.id: c for c in checks}
    assert (
        by_id["CHK-ONE"].udm_refs == ["COMP-009"] and by_id["CHK-ONE"].section == "m.md#21-component-console"
    )
    assert [c.udm_refs for c in checks[1:]] == [["RM-001"], ["m.md#22-no-ids-here"]]
    assert checks[1].id.startswith("CHK-m-")
    assert len(problems) == 1 and problems[0].source.startswith("m.md:")
    assert filter_checks(checks, refs=["COMP-009"]) == [by_id["CHK-ONE"]]
    assert filter_checks(checks, refs=["22-no-ids-here"]) == [checks[2]]
    assert filter_checks(checks, only=["chk-one"]) == [by_id["CHK-ONE"]]


def test_url_resolution() -> None:
    assert resolve_url("/login", "http://127.0.0.1:8000") == ("http://127.0.0.1:8000/login", None)
    assert resolve_url("http://x.test/a", None) == ("http://x.test/a", None)
    assert resolve_url("example.com/a", None) == ("https://example.com/a", None)
    url, why = resolve_url("/login", None)
    assert url is None and why and "--base-url" in why
    url, why = resolve_url("${HOST}/x", None)
    assert url is None and why and "HOST" in why


def test_compare_images(tmp_path: Path) -> None:
    import io

    def png(color: tuple[int, int, int], size: tuple[int, int] = (100, 100)) -> bytes:
        buf = io.BytesIO()
        Image.new("RGB", size, color).save(buf, format="PNG")
        return buf.getvalue()

    base = tmp_path / "b.png"
    base.write_bytes(png((0, 0, 0)))
    assert compare_images(png((0, 0, 0)), base, 24) == (0.0, None)
    assert compare_images(png((10, 10, 10)), base, 24)[0] == 0.0  # under the pixel threshold
    img = Image.new("RGB", (100, 100), (0, 0, 0))
    img.paste((255, 255, 255), (0, 0, 10, 100))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    variation, diff = compare_images(buf.getvalue(), base, 24)
    assert variation == pytest.approx(0.10) and diff is not None and diff.getpixel((5, 5)) == (255, 0, 0)
    assert compare_images(png((0, 0, 0), (100, 50)), base, 24)[0] == pytest.approx(0.5)


def test_runner_statuses_retries_and_visual_baselines(site: str, bctx, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec = """
checks:
  - id: CHK-SIGNIN
    udm_refs: [COMP-003]
    url: /form
    steps:
      - {tool: typeText, input: {selector_type: css, selector_value: "#user", text_to_type: ann}}
      - {tool: clickElement, input: {selector_type: css, selector_value: "button[type=submit]"}}
    expect:
      - {exists: "#welcome"}
      - {absent: ".error"}
      - {text: {selector: h1, contains: Welcome}}
      - {url: {contains: /home}}
      - {status: 200}
      - {title: Home}
  - id: CHK-WRONG
    url: ${BASE_URL}/table
    retries: 1
    timeout: 1.5
    expect:
      - {text: {selector: th, equals: Nope}}
      - {attribute: {selector: table, name: class, equals: data}}
      - {exists: ".missing"}
  - id: CHK-404
    url: /status404
    expect: [{status: 200}]
  - id: CHK-SKIP
    url: /a
    skip: not today
  - id: CHK-EVIDENCE
    url: /a
    evidence: always
    expect: [{title: Page A}]
  - id: CHK-CRITICAL
    url: /a
    steps: [{tool: wait_for_condition, input: {condition: "true"}}]
  - id: CHK-VISUAL
    url: /visual?color=navy
    expect: [{screenshot: {baseline: baselines/box.png, maxVariation: 0.01}}]
"""
    checks, problems, _ = load_spec_file(_spec(tmp_path, spec))
    assert not problems
    results = {r.id: r for r in run_checks_sync(checks, bctx.settings, base_url=site, concurrency=3)}
    assert results["CHK-SIGNIN"].status == "PASS", results["CHK-SIGNIN"].reason
    # Screenshots only where a check asks for one or fails.
    assert results["CHK-SIGNIN"].screenshot is None
    assert Path(results["CHK-EVIDENCE"].screenshot or "").is_file()
    wrong = results["CHK-WRONG"]
    assert wrong.status == "FAIL" and wrong.attempts == 2 and Path(wrong.screenshot or "").is_file()
    assert wrong.failures[0] == (
        "expect[1] text: text of 'th' is 'Name', expected it equals \"Nope\" "
        "(last value seen, after waiting 1.5 s)"
    )
    assert (
        len(wrong.failures) == 2
        and "Timed out after 1.5 s waiting for selector '.missing'" in wrong.failures[1]
    )
    assert results["CHK-404"].status == "FAIL" and "HTTP status is 404" in (results["CHK-404"].reason or "")
    assert results["CHK-SKIP"].status == "SKIPPED" and results["CHK-SKIP"].reason == "not today"
    assert results["CHK-CRITICAL"].status == "FAIL" and "critical" in (results["CHK-CRITICAL"].reason or "")
    visual = results["CHK-VISUAL"]
    assert visual.status == "WARNING" and "no baseline yet" in (visual.reason or "")
    assert (tmp_path / "baselines" / "box.png").is_file()

    # Same page again: PASS. A visual change: FAIL with a diff image; with a hard limit: WARNING.
    again = run_checks_sync([c for c in checks if c.id == "CHK-VISUAL"], bctx.settings, base_url=site)[0]
    assert again.status == "PASS", again.reason
    changed_spec = spec.replace("color=navy", "color=red")
    changed, _, _ = load_spec_file(_spec(tmp_path, changed_spec))
    changed_visual = [c for c in changed if c.id == "CHK-VISUAL"]
    failed = run_checks_sync(changed_visual, bctx.settings, base_url=site)[0]
    assert failed.status == "FAIL" and "of pixels differ from box.png" in (failed.reason or "")
    assert failed.diff_image and Path(failed.diff_image).is_file()
    banded = changed_visual[0].model_copy(deep=True)
    assert banded.expect[0].screenshot is not None
    banded.expect[0].screenshot.fail_variation = 0.9
    banded._base_dir = tmp_path
    warned = run_checks_sync([banded], bctx.settings, base_url=site)[0]
    assert warned.status == "WARNING" and "under the hard limit" in (warned.reason or "")


def test_relative_url_without_base_is_skipped(bctx) -> None:  # type: ignore[no-untyped-def]
    check = Check(id="CHK-REL", url="/x")
    result = run_checks_sync([check], bctx.settings)[0]
    assert result.status == "SKIPPED" and "--base-url" in (result.reason or "")


@pytest.mark.prefect
def test_flow_runs_inline_and_spec_checks_and_records_them(
    prefect_server, site, workspace, tmp_path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    import prefect.artifacts

    keys: dict[str, str] = {}
    # Capture what the flow publishes (reading artifacts back from the test server is not reliable here).
    for fn, field in (
        ("create_table_artifact", "table"),
        ("create_markdown_artifact", "markdown"),
        ("create_image_artifact", "image_url"),
    ):
        real = getattr(prefect.artifacts, fn)

        def capture(*args, _real=real, _field=field, **kwargs):  # type: ignore[no-untyped-def]
            keys[kwargs["key"]] = str(kwargs[_field])
            return _real(*args, **kwargs)

        monkeypatch.setattr(prefect.artifacts, fn, capture)
    from flows.browser_verify import browser_verification_flow
    from udm.verify import last_verified, verification_history

    # The flow reads its settings where it runs (environment, udm.toml): allow the loopback test site there.
    monkeypatch.setenv("UDM_FETCH_ALLOW", "127.0.0.1")

    spec = _spec(
        tmp_path,
        "checks:\n  - {id: CHK-EXTRA, udm_refs: [RM-001], url: /b, timeout: 1, expect: [{text: {selector: h1, equals: A}}]}\n",
    )
    settings = load_settings(cwd=workspace)
    state = browser_verification_flow(
        specs=[str(spec)],
        refs=["RM-001"],
        base_url=site,
        root=str(settings.udm_root),
        state_dir=str(settings.state_path),
        return_state=True,
    )
    # A failing check fails the run; the summary is still its data.
    assert state.is_failed() and "1 check(s) failed" in (state.message or "")
    summary = state.result(raise_on_failure=False)
    assert [r["id"] for r in summary["results"]] == ["CHK-EXTRA"]
    assert summary["counts"]["FAIL"] == 1 and summary["recorded"] == 1
    rows = last_verified(settings, "RM-001")
    assert [(r["check_id"], r["status"]) for r in rows] == [("CHK-EXTRA", "FAIL")]
    assert verification_history(settings, "CHK-EXTRA")[0]["reason"].startswith("expect[1] text")

    assert "browser-verification-results" in keys and "CHK-EXTRA" in keys["browser-verification-results"]
    assert "browser-verification-summary" in keys and "CHK-EXTRA" in keys["browser-verification-summary"]
    assert "RM-001" in keys["browser-verification-summary"]
    assert "verify-chk-extra" in keys and keys["verify-chk-extra"].startswith("data:image/jpeg;base64,")

    from flows.browser_verify import link_check_flow

    report = link_check_flow(external=False, root=str(settings.udm_root), state_dir=str(settings.state_path))
    assert report["counts"].get("ok", 0) > 20 and "udm-link-check" in keys


def test_cli_verify_json_and_browser_run(site, workspace, tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from flows.cli import run

    monkeypatch.chdir(workspace)
    monkeypatch.setenv("UDM_FETCH_ALLOW", "127.0.0.1")
    spec = _spec(
        tmp_path,
        "checks:\n  - {id: CHK-A, url: /a, expect: [{title: Page A}]}\n  - {id: CHK-B, url: /b, timeout: 1, expect: [{title: Page A}]}\n",
    )
    code = run(["verify", str(spec), "--no-inline", "--base-url", site, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    assert [(o["id"], o["status"]) for o in out] == [("CHK-A", "PASS"), ("CHK-B", "FAIL")]
    assert set(out[0]) >= {"id", "status", "duration_ms", "reason", "screenshot"}
    assert run(["verify", str(spec), "--no-inline", "--base-url", site, "--only", "CHK-A", "--json"]) == 0
    capsys.readouterr()
    assert run(["verified", "CHK-B", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["status"] == "FAIL"
    assert run(["verify", str(tmp_path / "missing.yaml")]) == 2
    capsys.readouterr()

    steps = tmp_path / "steps.yaml"
    steps.write_text(
        yaml.safe_dump(
            [
                {"tool": "navigate_to_url", "input": {"url": site + "/form"}},
                {
                    "tool": "typeText",
                    "input": {"selector_type": "css", "selector_value": "#user", "text_to_type": "bo"},
                },
                {
                    "tool": "clickElement",
                    "input": {"selector_type": "css", "selector_value": "button[type=submit]"},
                },
                {"tool": "getElementText", "input": {"selector_type": "css", "selector_value": "h1"}},
                {"tool": "closeBrowser", "input": {}},
            ]
        )
    )
    code = run(["browser", "run", str(steps), "--yes", "--json"])
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert code == 0 and len(lines) == 5
    assert lines[3]["data"]["text"] == "Welcome bo"


def test_sample_udm_inline_checks_pass_against_the_demo_site(workspace, bctx) -> None:  # type: ignore[no-untyped-def]
    from flows.cli_browser import serve_site
    from udm.verify import gather_checks

    settings = load_settings(cwd=workspace, fetch_allow=["127.0.0.1"])
    checks, problems = gather_checks(settings)
    assert not problems
    assert {c.id for c in checks} >= {"CHK-CONSOLE-HOME", "CHK-CONSOLE-ASK", "CHK-CONSOLE-SOURCES"}
    assert all(c.udm_refs == ["COMP-001"] for c in checks)
    server, base = serve_site()
    try:
        results = run_checks_sync(checks, settings, base_url=base)
    finally:
        server.shutdown()
        server.server_close()
    assert [(r.id, r.status, r.reason) for r in results if r.status != "PASS"] == []
