"""JSON the limits engineer left unmeasured: `--param` values on the CLI and an LLM's reply.

`udm pipeline check/run --param x=[[[...` (5,000 levels) printed a RecursionError traceback, and a
synthesizing model whose reply nested that deep (it may echo fetched pages) raised RecursionError out
of the research run instead of the LLMError that makes it fall back. Both are now measured first.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.llm_synth import LLMError, _json_object

DEEP = "[" * 5000 + "]" * 5000


def test_a_deep_param_is_a_clear_cli_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from flows.cli import run

    spec = tmp_path / "s.yaml"
    spec.write_text(
        "name: b\nsteps:\n  a: {tool: udmQueryTool, input: {query_type: search, udm_path_or_id: x}}\n"
    )
    assert run(["pipeline", "check", str(spec), "--param", "x=" + DEEP]) == 2
    err = capsys.readouterr().err
    assert "--param" in err and "'x' is refused" in err and "Traceback" not in err, err


def test_a_shallow_param_still_parses_as_json() -> None:
    from flows.cli_platform import _params

    assert _params(['x={"a": [1, 2]}', "y=plain text"]) == {"x": {"a": [1, 2]}, "y": "plain text"}


def test_a_deep_model_reply_is_an_llm_error() -> None:
    with pytest.raises(LLMError, match="refused"):
        _json_object('{"claims": ' + DEEP + "}")
    assert _json_object('```json\n{"claims": []}\n```') == {"claims": []}
