"""Patch record files in state/patches are untrusted input: one that is not a record is named, never a traceback.

`udm patch show` exits 1 naming the file and what is wrong; `udm patch list` leaves it out with a warning
line naming it and lists the rest; `udm patch revert` refuses it as an error status.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flows.cli import run
from udm.config import Settings
from udm.errors import PatchError
from udm.patch import Patch, apply_patch, list_records, load_record

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
NOT_OBJECTS = JSON_VALUES.filter(lambda v: not isinstance(v, dict))


def _junk_of(good: dict[str, Any]) -> st.SearchStrategy[Any]:
    """A record with one field replaced by a value of the wrong type, or one file entry spoiled."""
    required = ["id", "files", "diff", "inverse"]
    wrong = JSON_VALUES.filter(lambda v: not isinstance(v, str) and not isinstance(v, list))

    def spoil(args: tuple[str, Any]) -> dict[str, Any]:
        key, value = args
        return {**good, key: value}

    one_field = st.tuples(st.sampled_from(required), wrong).map(spoil)
    review = JSON_VALUES.filter(lambda v: v is not None and not isinstance(v, dict)).map(
        lambda v: {**good, "review": v}
    )
    one_entry = st.tuples(
        st.sampled_from(["files", "inverse"]), JSON_VALUES.filter(lambda v: not isinstance(v, dict))
    ).map(lambda a: {**good, a[0]: [a[1]]})
    dropped = st.sampled_from(required).map(lambda k: {x: v for x, v in good.items() if x != k})
    return one_field | review | one_entry | dropped


def _plant(small: Settings, name: str, text: str) -> Path:
    path = small.state_path / "patches" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _check_refused(small: Settings, path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(PatchError, match=r"patch record .*junk\.json is (unreadable|not a patch record)"):
        load_record(small, "junk")
    skipped: list[str] = []
    assert [r["id"] for r in list_records(small, skipped)] == ["good"]
    assert len(skipped) == 1 and str(path) in skipped[0]
    capsys.readouterr()
    assert run(["patch", "show", "junk"]) == 1
    err = capsys.readouterr().err
    assert f"error: patch record {path} is " in err and "Traceback" not in err
    assert run(["patch", "list"]) == 0
    out, err = capsys.readouterr()
    assert "  good  " in out and "junk" not in out
    assert err.startswith(f"warning: skipped patch record {path} is ")


@pytest.fixture
def two(small: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The small root with one real record in its store (patch `good`), as the working directory."""
    patch = Patch.model_validate(
        {
            "id": "good",
            "operations": [
                {"op": "append_to_section", "file": "roadmap.md", "section": "Phase 2", "content": "x"}
            ],
        }
    )
    assert apply_patch(patch, small).committed
    monkeypatch.chdir(small.project_root)
    return small


@pytest.fixture
def good_record(two: Settings) -> dict[str, Any]:
    """The record the engine wrote for patch `good`."""
    data: dict[str, Any] = json.loads((two.state_path / "patches" / "good.json").read_text())
    return data


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=NOT_OBJECTS)
def test_a_record_that_is_not_an_object_is_named(
    two: Settings, value: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _plant(two, "junk", json.dumps(value))
    _check_refused(two, path, capsys)
    with pytest.raises(PatchError, match="not an object"):
        load_record(two, "junk")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_record_with_a_field_of_the_wrong_shape_is_named(
    two: Settings, good_record: dict[str, Any], data: st.DataObject, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _plant(two, "junk", json.dumps(data.draw(_junk_of({**good_record, "id": "junk"}))))
    _check_refused(two, path, capsys)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=400))
def test_a_truncated_record_is_named(
    two: Settings, good_record: dict[str, Any], cut: int, capsys: pytest.CaptureFixture[str]
) -> None:
    text = json.dumps({**good_record, "id": "junk"})
    path = _plant(two, "junk", text[: min(cut, len(text) - 1)])
    _check_refused(two, path, capsys)


def test_a_junk_record_is_a_refused_revert(two: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    path = _plant(two, "junk", "[]")
    assert run(["patch", "revert", "junk", "--yes"]) == 1
    err = capsys.readouterr().err
    assert f"patch record {path} is not a patch record: it holds a JSON array" in err
    assert "internal error" not in err


def test_records_the_engine_writes_read_back(two: Settings) -> None:
    assert load_record(two, "good")["id"] == "good"
    assert [r["id"] for r in list_records(two)] == ["good"]
