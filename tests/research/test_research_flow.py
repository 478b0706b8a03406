"""research_flow end to end under the session Prefect server, against the loopback site and APIs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from udm.config import load_settings

pytestmark = [pytest.mark.prefect, pytest.mark.slow]


def test_research_flow_writes_a_cited_appendix(prefect_server: None, site, api, workspace: Path) -> None:
    from flows.research import ResearchRequest, run_research

    settings = load_settings(
        cwd=workspace,
        fetch_allow=["127.0.0.1"],
        fetch_timeout_s=1.0,
        fetch_host_delay_s=0.0,
        fetch_retries=2,
        retry_max_wait_s=1.0,
        approval_policy="full_auto",
        context7_url=api.base,
    )
    request = ResearchRequest(
        question="How does DuckDB full-text search rank matches with BM25?",
        urls=[
            site.base + "/article.html",
            site.base + "/article.html?utm_source=newsletter#top",  # the same page: deduplicated
            site.base + "/flaky-1",  # 500 then 200: retried
            site.base + "/ratelimited",  # 429 with Retry-After: 1, then 200: retried after the wait
            site.base + "/redirect-private",  # to 127.0.0.2: refused
            site.base + "/challenge",  # anti-bot page: not citable
            site.base + "/doc.pdf",
        ],
        files=["docs/udm/02-system-architecture.md"],
        libraries=["duckdb"],
        max_sources=12,
    )
    result = run_research(request, settings)
    assert result.status == "written", result.message
    by_url = {s["url"]: s for s in result.sources}
    assert len([u for u in by_url if "/article.html" in u]) == 1
    # Both serve the article once their retry succeeds: the same document, cited once under its first number.
    article_n = by_url[site.base + "/article.html"]["n"]
    for path in ("/flaky-1", "/ratelimited"):
        dup = by_url[site.base + path]
        assert site.hits[path] == 2, path
        assert dup["status"] == "DUPLICATE" and dup["reason"] == f"the same document as source {article_n}"
    # Not failures: refused, anti-bot (the duplicates and the PDF, Context7 and the article are fine).
    assert result.sources_failed == 2, result.sources
    private = by_url[site.base + "/redirect-private"]
    assert private["status"] == "ERROR_FETCH_FAILED" and "127.0.0.2" in private["reason"]
    assert site.trap_hits == []
    assert by_url[site.base + "/challenge"]["status"] == "ERROR_PARSE_FAILED"
    assert any(s["origin"] == "library: duckdb" and s["status"] == "ok" for s in result.sources)
    # The default search provider searches the manual itself: context, not sources, unless asked.
    assert not any(s["origin"].startswith("search: ") for s in result.sources)

    path = settings.udm_root / result.appendix_path
    text = path.read_text(encoding="utf-8")
    assert result.appendix_id == "APP-DUCKDB-FULLTEXT-SEARCH-RESEARCH-V1"
    assert text.startswith(f"# {result.appendix_id}: ") and "## 1. Answer" in text
    answer = text.split("## 1. Answer\n\n", 1)[1].split("\n\n", 1)[0]
    assert "BM25" in answer and f"[{article_n}]" in answer
    block = text.split("```yaml\nsources:", 1)[1].split("```", 1)[0]
    listed = yaml.safe_load("sources:" + block)["sources"]
    assert len(listed) == len(result.sources) and all("sha256" in s for s in listed)
    index = (settings.udm_root / "appendices" / "00-appendix-index.md").read_text(encoding="utf-8")
    assert f"[{result.appendix_id}]({result.appendix_id}.md#" in index

    # Again: fetches come from the Prefect cache (the site is not asked again); the same sources with
    # the same contents (the manual's new appendix is no source) leave V1 standing.
    before = site.hits["/article.html"]
    again = run_research(request, settings)
    assert again.status == "unchanged" and again.appendix_id == result.appendix_id, again.message
    assert site.hits["/article.html"] == before
    # The refused and failed sources are tried again (failures are never cached).
    assert {s["url"]: s for s in again.sources}[site.base + "/challenge"]["status"] == "ERROR_PARSE_FAILED"


def test_research_report_only(prefect_server: None, site, workspace: Path) -> None:
    from flows.research import ResearchRequest, run_research

    settings = load_settings(cwd=workspace, fetch_allow=["127.0.0.1"], fetch_host_delay_s=0.0)
    request = ResearchRequest(
        question="What is in the notes?", urls=[site.base + "/notes.txt"], write=False, max_cache_age_s=0
    )
    result = run_research(request, settings)
    assert result.status == "reported" and result.update is None
    assert not (settings.udm_root / result.appendix_path).exists()
    assert "never the truth" in result.markdown or result.sources_ok >= 1
    # Asked for, the manual's own search hits become sources (local files).
    manual = run_research(
        ResearchRequest(
            question="How does DuckDB full-text search rank matches with BM25?",
            include_manual=True,
            write=False,
            max_cache_age_s=0,
        ),
        settings,
    )
    hits = [s for s in manual.sources if s["origin"].startswith("search: ")]
    assert hits and all(str(settings.udm_root) in s["url"] for s in hits), manual.sources


def test_research_rerun_with_the_same_sources_is_unchanged(
    prefect_server: None, site, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import flows.research_appendix as research_mod
    from flows.research import ResearchRequest, run_research

    settings = load_settings(
        cwd=workspace, fetch_allow=["127.0.0.1"], fetch_host_delay_s=0.0, approval_policy="full_auto"
    )
    # max_sources=1 keeps only the seed URL (seeds come before search hits), so the sources are fixed.
    request = ResearchRequest(
        question="What do the articles say about BM25?", urls=[site.base + "/article.html"], max_sources=1
    )
    first = run_research(request, settings)
    assert first.status == "written" and first.appendix_id.endswith("-V1"), first.message
    ranked = research_mod._synthesize

    def not_again(*args: object, **kwargs: object) -> object:
        raise AssertionError("an unchanged re-run synthesised the answer again")

    monkeypatch.setattr(research_mod, "_synthesize", not_again)
    again = run_research(request, settings)
    assert again.status == "unchanged" and again.appendix_id == first.appendix_id, again.message
    assert again.findings == first.findings > 0
    monkeypatch.setattr(research_mod, "_synthesize", ranked)
    assert again.update is None
    assert not (settings.udm_root / first.appendix_path.replace("-V1", "-V2")).exists()
    forced = run_research(request.model_copy(update={"new_version_if_unchanged": True}), settings)
    assert forced.status == "written" and forced.appendix_id.endswith("-V2"), forced.message


def _task_runs(flow_run_id: str | None) -> dict[str, list[str]]:
    """Task run names of a flow run by state name, read back once the server has recorded them all."""
    import time

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId, TaskRunFilter

    assert flow_run_id is not None
    out: dict[str, list[str]] = {}
    deadline = time.monotonic() + 30
    with get_client(sync_client=True) as client:
        while True:
            runs = client.read_task_runs(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])),
                task_run_filter=TaskRunFilter(),
            )
            out = {}
            for run in runs:
                out.setdefault(run.state_name or "?", []).append(run.name)
            # The server records task runs from their events, a little behind the run itself.
            if not ({"Pending", "Running", "Scheduled"} & set(out)) or time.monotonic() > deadline:
                return out
            time.sleep(0.2)


def test_research_rerun_is_one_cache_hit_and_failed_sources_are_retried(
    prefect_server: None, site, workspace: Path
) -> None:
    from flows.research import ResearchRequest, run_research

    settings = load_settings(
        cwd=workspace,
        fetch_allow=["127.0.0.1"],
        fetch_host_delay_s=0.0,
        fetch_retries=0,
        approval_policy="full_auto",
    )
    good = [site.base + "/article.html", site.base + "/notes.txt", site.base + "/readme.md"]
    request = ResearchRequest(question="What do the notes say about caching?", urls=good, max_sources=3)
    first = run_research(request, settings)
    assert first.sources_ok == 3, first.sources
    hits = {p: site.hits[p] for p in ("/article.html", "/notes.txt", "/readme.md")}
    again = run_research(request, settings)
    assert again.status == "unchanged", again.message
    assert {p: site.hits[p] for p in hits} == hits  # nothing fetched again
    runs = _task_runs(again.flow_run_id)
    # The whole fan-out came from one cached batch: no task run per source this time.
    assert runs.get("Cached") == ["fetch 3 sources"], runs
    assert not any(name.startswith("fetch batch") for names in runs.values() for name in names), runs

    # A source that fails after its retries keeps its batch out of the cache: the next run fetches
    # that batch again, while the other batches are cache hits of their own (one source a batch here).
    # Sources never fetched before, so their own cache entries come from these batches.
    settings = settings.model_copy(update={"research_batch_size": 1})
    fresh = [site.base + "/article-copy.html", site.base + "/doc.pdf"]
    flaky = ResearchRequest(
        question="What do the notes say about failures?",
        urls=[*fresh, site.base + "/always-500"],
        max_sources=3,
    )
    one = run_research(flaky, settings)
    assert {s["url"]: s["status"] for s in one.sources}[site.base + "/always-500"] != "ok"
    seen = {p: site.hits[p] for p in ("/article-copy.html", "/doc.pdf", "/always-500")}
    assert seen["/article-copy.html"] == seen["/doc.pdf"] == 1
    two = run_research(flaky, settings)
    assert site.hits["/always-500"] == seen["/always-500"] + 1
    assert site.hits["/article-copy.html"] == 1 and site.hits["/doc.pdf"] == 1
    runs = _task_runs(two.flow_run_id)
    assert sorted(runs.get("Failed", [])) == ["fetch 3 sources", "fetch batch 3/3: sources 3-3"], runs
    assert sorted(runs.get("Cached", [])) == [
        "fetch batch 1/3: sources 1-1",
        "fetch batch 2/3: sources 2-2",
    ], runs


def test_a_cached_batch_older_than_its_sources_allow_is_not_fresh() -> None:
    from datetime import UTC, datetime, timedelta

    from flows.research_fetch import _fresh

    now = datetime.now(UTC)
    env = lambda at: {"data": {"metadata": {"fetched_at": at}}}  # noqa: E731
    assert _fresh([env(now.isoformat()), {"data": None}], 60)
    assert not _fresh([env(now.isoformat()), env((now - timedelta(seconds=120)).isoformat())], 60)
    assert not _fresh([env("yesterday")], 60)
    # A naive timestamp is read as UTC.
    assert _fresh([env((now - timedelta(seconds=5)).replace(tzinfo=None).isoformat())], 60)


def test_a_cached_batch_with_a_stale_source_fetches_that_source_again(
    prefect_server: None, site, workspace: Path
) -> None:
    import time

    from flows.research import ResearchRequest, run_research

    # One source a batch: the second request's batches are the first's plus one.
    settings = load_settings(
        cwd=workspace, fetch_allow=["127.0.0.1"], fetch_host_delay_s=0.0, research_batch_size=1
    )
    old, new = site.base + "/article-copy.html", site.base + "/notes.txt"
    ask = {"question": "What do the copies say?", "write": False, "max_cache_age_s": 6}
    run_research(ResearchRequest(urls=[old], max_sources=1, **ask), settings)
    time.sleep(3)
    both = ResearchRequest(urls=[old, new], max_sources=2, **ask)
    run_research(both, settings)  # the batch is cached now, holding `old` as fetched 3 s earlier
    assert site.hits["/article-copy.html"] == 1 and site.hits["/notes.txt"] == 1
    time.sleep(3.5)
    # The batch is 3.5 s old (fresh), but `old` was fetched 6.5 s ago: past the 6 s the request allows
    # (the margins leave a loaded machine 2.5 s for the runs themselves).
    again = run_research(both, settings)
    assert site.hits["/article-copy.html"] == 2, "the stale source was served from the batch"
    assert site.hits["/notes.txt"] == 1  # still a cache hit of its own
    assert again.sources_ok == 2


def test_a_changed_local_file_is_read_again_within_the_cache_age(
    prefect_server: None, site, workspace: Path
) -> None:
    import os

    from flows.research import ResearchRequest, run_research

    # One source a batch: the edited file's batch is read again, the others stay cache hits.
    settings = load_settings(
        cwd=workspace, fetch_allow=["127.0.0.1"], fetch_host_delay_s=0.0, research_batch_size=1
    )
    note = settings.udm_root / "notes-cache-test.md"
    note.write_text("# Cache note\n\nThe index keeps sections by content hash.\n", encoding="utf-8")
    request = ResearchRequest(
        question="What does the cache note say?",
        files=[str(note.relative_to(settings.project_root)), "docs/udm/02-system-architecture.md"],
        urls=[site.base + "/notes.txt"],
        max_sources=3,
        write=False,
    )
    first = run_research(request, settings)
    assert first.sources_ok == 3, first.sources
    same = run_research(request, settings)
    assert [s["content_hash"] for s in same.sources] == [s["content_hash"] for s in first.sources]
    note.write_text("# Cache note\n\nThe index now keeps sections by generation.\n", encoding="utf-8")
    stat = note.stat()
    os.utime(note, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # a distinct mtime
    hits = site.hits["/notes.txt"]
    changed = run_research(request, settings)
    by_url = {s["url"]: s for s in changed.sources}
    before = {s["url"]: s for s in first.sources}
    changed_note = next(u for u in by_url if u.endswith("notes-cache-test.md"))
    assert by_url[changed_note]["content_hash"] != before[changed_note]["content_hash"]
    # The other file and the URL are still cache hits of their own.
    other = next(u for u in by_url if u.endswith("02-system-architecture.md"))
    assert by_url[other]["content_hash"] == before[other]["content_hash"]
    assert site.hits["/notes.txt"] == hits


def test_the_manual_is_context_not_a_source_unless_asked(workspace: Path) -> None:
    from flows.research import ResearchRequest
    from flows.research_sources import plan_sources as _plan_sources

    settings = load_settings(cwd=workspace)
    links = [
        ("udm://appendices/APP-ROADMAP.md#L3", "search: q"),
        ("https://Example.com/a?utm_source=x", "search: q"),
        ("https://example.com/a#part", "search: q"),  # the same page: fetched once
    ]
    plain = _plan_sources(settings, ResearchRequest(question="What is planned?"), links)
    assert [(s.kind, s.url) for s in plain] == [("url", "https://example.com/a")]
    asked = _plan_sources(settings, ResearchRequest(question="What is planned?", include_manual=True), links)
    assert [s.kind for s in asked] == ["file", "url"]
    assert asked[0].url == str(settings.udm_root / "appendices/APP-ROADMAP.md")
