"""The fast ID scan (a cheap start scan, then the full pattern) finds exactly what the full pattern does."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from udm.config import DEFAULT_ID_PATTERNS
from udm.markdown import id_matcher
from udm.markdown.ids import IdMatcher

# Pieces that make IDs, near-IDs and the characters around them that decide whole-token matches.
PIECES = st.sampled_from(
    [
        "TASK-P0-M0.1-T001",
        "TASK-P12-M3-T9",
        "COMP-001",
        "COMP-1.2",
        "API-COMP-001-v1",
        "APP-NODEJS-FS-RESEARCH-V1",
        "ROO-MODE-PLAN-STRATEGIC",
        "CHK-LINKS-2",
        "PROJ-12",
        "DOC-API-3-V2",
        "SHA-256",
        "UTF-8",
        "ABC",
        "A-",
        "-",
        "_",
        ".",
        ".5",
        "x",
        "v1",
        "9",
        " ",
        "\n",
        "`",
        "(",
        "é",
        "Ω-1",
    ]
)


def _both(matcher: IdMatcher, text: str) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    plain = [(m.start(), m.group(0)) for m in matcher.regex.finditer(text)]
    fast = [(m.start(), m.group(0)) for m in matcher.finditer(text)]
    return plain, fast


@settings(max_examples=400, deadline=None)
@given(st.lists(PIECES, max_size=30).map("".join))
def test_fast_scan_matches_the_full_pattern(text: str) -> None:
    plain, fast = _both(id_matcher(None), text)
    assert fast == plain


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="AZTCOMP-_.019vx \n", max_size=60))
def test_fast_scan_on_arbitrary_text(text: str) -> None:
    plain, fast = _both(id_matcher(None), text)
    assert fast == plain


def test_custom_families_keep_the_plain_scan() -> None:
    custom = IdMatcher([*DEFAULT_ID_PATTERNS, r"[a-z]+_\d+"])
    assert custom._start is None
    assert custom.findall("see job_12 and COMP-001") == ["job_12", "COMP-001"]
    subset = IdMatcher(DEFAULT_ID_PATTERNS[:2])
    assert subset._start is not None
    assert subset.findall("(TASK-P0-M0.1-T001), API-COMP-001-v1.") == ["TASK-P0-M0.1-T001", "API-COMP-001-v1"]
