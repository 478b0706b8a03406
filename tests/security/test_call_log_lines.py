"""The call log (`logs/tool-calls.jsonl`, `tasks/calllog.py`) under hostile tool inputs.

A caller chooses its input's field names, and an invalid input's names are logged too. Attacks: a
name holding U+2028, U+0085 or another separator that line readers such as `str.splitlines` end a
line at (one record read as two broken ones); a name of megabytes or a million names (a log line of
that size, contents smuggled into a log that promises none); keys that are not text (a TypeError out
of `call_tool`, from an in-process caller such as a pipeline step); input nested past the recursion
limit. Every case asserts one well-formed JSON line per call, bounded, and a result, not a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from tasks.base import ToolContext, always_approve, call_tool
from tasks.calllog import call_record
from udm.config import Settings

SEPARATORS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def _lines(settings: Settings) -> list[str]:
    path: Path = settings.logs_path / "tool-calls.jsonl"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def _call(settings: Settings, raw: Any) -> Any:
    return call_tool("udmQueryTool", raw, ToolContext(settings=settings, approver=always_approve))


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    names=st.lists(
        st.text(st.sampled_from(SEPARATORS + '{}":,[]\\ab'), min_size=1, max_size=40),
        min_size=1,
        max_size=4,
        unique=True,
    )
)
def test_field_names_never_split_or_forge_a_line(settings: Settings, names: list[str]) -> None:
    before = len(_lines(settings))
    _call(settings, dict.fromkeys(names, 1))
    lines = _lines(settings)
    # Before: U+2028 and friends were written raw, and splitlines() read one record as two.
    assert len(lines) == before + 1
    record = json.loads(lines[-1])
    assert record["tool"] == "udmQueryTool" and record["status"] == "INVALID_INPUT"
    assert record["input_fields"] == sorted(names)
    assert lines[-1].isascii()


def test_huge_or_many_field_names_give_a_bounded_line(settings: Settings) -> None:
    _call(settings, {"k" * (4 << 20): 1})
    _call(settings, {f"f{i}": i for i in range(200_000)})
    huge, many = (json.loads(line) for line in _lines(settings)[-2:])
    # Before: a 4 MiB line, then a 2 MB one, of names the caller chose.
    assert len(_lines(settings)[-2]) < 2_000 and len(_lines(settings)[-1]) < 10_000
    assert huge["input_fields"] == ["k" * 100 + "…"]
    assert many["input_fields"][-1] == f"… ({200_000 - 64} more)" and len(many["input_fields"]) == 65
    assert huge["input_digest"] != many["input_digest"]


def test_keys_that_are_not_text_are_logged_not_raised(settings: Settings) -> None:
    res = _call(settings, {1: "a", "query_type": "stats", None: 2})
    assert not res.envelope.success and res.decision == "invalid"
    assert json.loads(_lines(settings)[-1])["input_fields"] == ["1", "None", "query_type"]
    assert call_record("x", {2: 1, "b": 1})["input_fields"] == ["2", "b"]


def test_input_past_the_recursion_limit_is_logged(settings: Settings) -> None:
    value: Any = 1
    for _ in range(5000):
        value = [value]
    res = _call(settings, {"query_type": "stats", "deep": value})
    assert not res.envelope.success
    record = json.loads(_lines(settings)[-1])
    assert record["input_fields"] == ["deep", "query_type"] and record["input_digest"].startswith("sha256:")
