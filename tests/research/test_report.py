"""The research flow's pure parts: canonical URLs, topics, versions, ranking and the appendix text."""

from __future__ import annotations

from pathlib import Path

import yaml

from flows.research_report import (
    Source,
    appendix_id,
    canonical_url,
    heading_safe,
    index_link_operation,
    latest_fingerprint,
    next_version,
    render_appendix,
    research_fingerprint,
    topic_of,
)
from udm.markdown import parse_document
from udm.research import Claim, Evidence, ExtractiveSynthesizer, Synthesis, rank_passages, split_passages


def test_canonical_url_merges_spellings() -> None:
    a = canonical_url("HTTPS://Docs.Example.COM:443/a//b?utm_source=x&b=2&a=1#frag")
    assert a == "https://docs.example.com/a/b?a=1&b=2"
    assert canonical_url("http://example.com") == "http://example.com/"
    assert canonical_url("http://example.com:8080/x?fbclid=1") == "http://example.com:8080/x"


def test_topic_and_ids() -> None:
    assert topic_of("How does DuckDB full-text search rank results?") == "DUCKDB-FULLTEXT-SEARCH"
    assert topic_of("?") == "GENERAL"
    assert appendix_id("duckdb fts", 3) == "APP-DUCKDB-FTS-RESEARCH-V3"


def test_next_version(tmp_path: Path) -> None:
    assert next_version(tmp_path / "missing", "X") == 1
    (tmp_path / "APP-X-RESEARCH-V1.md").write_text("")
    (tmp_path / "APP-X-RESEARCH-V4.md").write_text("")
    (tmp_path / "APP-XY-RESEARCH-V9.md").write_text("")
    assert next_version(tmp_path, "X") == 5


def test_passages_ranked_by_bm25() -> None:
    text = "# Intro\n\nNothing here.\n\n## Caching\n\nPrefect caching uses cache keys.\n\nOther text about retries."
    passages = split_passages(text)
    assert passages[1].text.startswith("## Caching")
    ranked = rank_passages(passages, ["caching", "keys"])
    assert ranked[0].index == 1 and ranked[0].score > 0 and ranked[-1].score == 0


def test_heading_safe() -> None:
    assert heading_safe("About COMP-004 and APP-X-RESEARCH-V1") == "About comp-004 and app-x-research-v1"


def _sources() -> list[Source]:
    ok = Source(
        n=1,
        url="https://a.example/",
        kind="url",
        origin="seed",
        status="SUCCESS",
        title="A on COMP-004",
        fetched_at="2026-01-01T00:00:00+00:00",
        content_hash="sha256:" + "ab" * 32,
        text="# Caching\n\nPrefect caches task results by key and input. Keys come from the inputs of each task.\n\n"
        "Unrelated tail.",
    )
    bad = Source(
        n=2,
        url="https://b.example/",
        kind="url",
        origin="search: q",
        status="ERROR_FETCH_FAILED",
        reason="HTTP 500 | retried",
    )
    return [ok, bad]


def test_render_appendix_is_valid_udm_markdown() -> None:
    sources = _sources()
    q = "How does Prefect caching work?"
    synthesis = ExtractiveSynthesizer().synthesize(
        q, [q], [Evidence(1, "A", "https://a.example/", sources[0].text)]
    )
    assert [c.cites for c in synthesis.claims()] == [[1], [1]]  # the answer, then the finding
    md = render_appendix("APP-PREFECT-CACHING-RESEARCH-V1", q, sources, synthesis)
    assert md.startswith("# APP-PREFECT-CACHING-RESEARCH-V1: How does Prefect caching work")
    assert "[1]" in md and "| 2 | - | https://b.example/ |" in md and "HTTP 500 \\| retried" in md
    doc = parse_document(md, "appendices/APP-PREFECT-CACHING-RESEARCH-V1.md")
    defined = [d.id for d in doc.id_defs]
    assert defined == ["APP-PREFECT-CACHING-RESEARCH-V1"]  # quoted headings and titles define nothing
    block = md.split("```yaml\nsources:", 1)[1].split("```", 1)[0]
    data = yaml.safe_load("sources:" + block)
    assert data["sources"][0]["sha256"] == "ab" * 32 and data["sources"][1]["status"] == "ERROR_FETCH_FAILED"


def _empty(q: str) -> Synthesis:
    return Synthesis(answer=[], groups=[(q, [])])


def test_fingerprint_follows_sources_and_is_read_back(tmp_path: Path) -> None:
    sources = _sources()
    q = "How does Prefect caching work?"
    fp = research_fingerprint(q, [], sources)
    assert fp == research_fingerprint(q, [], _sources()) and len(fp) == 32
    changed = _sources()
    changed[0].content_hash = "sha256:" + "cd" * 32
    assert research_fingerprint(q, [], changed) != fp
    assert research_fingerprint(q, ["duckdb"], sources) != fp
    assert research_fingerprint(q + " ", [], sources) == fp  # surrounding spaces say nothing new
    assert latest_fingerprint(tmp_path, "PREFECT-CACHING") is None
    for version in (1, 2):
        app = appendix_id("PREFECT-CACHING", version)
        md = render_appendix(app, q, sources, _empty(q), fingerprint=fp if version == 2 else "0" * 32)
        (tmp_path / f"{app}.md").write_text(md, encoding="utf-8")
    assert latest_fingerprint(tmp_path, "PREFECT-CACHING") == ("APP-PREFECT-CACHING-RESEARCH-V2", fp, 0)
    # The number of findings is recorded beside the fingerprint (an unchanged re-run reports it).
    one = Claim(
        "Prefect caches task results by key and input.", [1], "Prefect caches task results by key and input."
    )
    md = render_appendix(
        appendix_id("PREFECT-CACHING", 3),
        q,
        sources,
        Synthesis(answer=[one], groups=[(q, [])]),
        fingerprint=fp,
    )
    (tmp_path / "APP-PREFECT-CACHING-RESEARCH-V3.md").write_text(md, encoding="utf-8")
    assert latest_fingerprint(tmp_path, "PREFECT-CACHING") == ("APP-PREFECT-CACHING-RESEARCH-V3", fp, 1)
    # An appendix from before the count: no count, so the flow ranks again.
    (tmp_path / "APP-PREFECT-CACHING-RESEARCH-V3.md").write_text(
        md.replace("findings: 1\n", ""), encoding="utf-8"
    )
    latest = latest_fingerprint(tmp_path, "PREFECT-CACHING")
    assert latest is not None and latest.findings is None and latest.fingerprint == fp


def test_index_link_operation_adds_a_table_row_or_a_list_item() -> None:
    table = "# Appendix Index\n\n| ID | Title | Task |\n| --- | --- | --- |\n| [APP-A-RESEARCH-V1](a.md) | A | `T` |\n\nBack.\n"
    op = index_link_operation(table, "APP-B-RESEARCH-V1", "B title", "app-b-research-v1-b-title")
    assert op["op"] == "replace_text" and op["old"] == "| [APP-A-RESEARCH-V1](a.md) | A | `T` |"
    assert op["new"].endswith(
        "| [APP-B-RESEARCH-V1](APP-B-RESEARCH-V1.md#app-b-research-v1-b-title) | B title | - |"
    )
    plain = index_link_operation("# Appendices\n\nNone yet.\n", "APP-B-RESEARCH-V1", "B", "x")
    assert plain["op"] == "append_to_section" and plain["section"] == "Appendices"
