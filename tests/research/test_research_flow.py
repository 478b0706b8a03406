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
    assert by_url[site.base + "/flaky-1"]["status"] == "ok" and site.hits["/flaky-1"] == 2
    assert by_url[site.base + "/ratelimited"]["status"] == "ok" and site.hits["/ratelimited"] == 2
    private = by_url[site.base + "/redirect-private"]
    assert private["status"] == "ERROR_FETCH_FAILED" and "127.0.0.2" in private["reason"]
    assert site.trap_hits == []
    assert by_url[site.base + "/challenge"]["status"] == "ERROR_PARSE_FAILED"
    assert any(s["origin"] == "library: duckdb" and s["status"] == "ok" for s in result.sources)
    assert any(s["origin"].startswith("search: ") for s in result.sources)  # the udm provider's hits

    path = settings.udm_root / result.appendix_path
    text = path.read_text(encoding="utf-8")
    assert result.appendix_id == "APP-DUCKDB-FULLTEXT-SEARCH-RESEARCH-V1"
    assert text.startswith(f"# {result.appendix_id}: ") and "## 1. Summary" in text
    article_n = by_url[site.base + "/article.html"]["n"]
    assert f"[{article_n}]" in text
    block = text.split("```yaml\nsources:", 1)[1].split("```", 1)[0]
    listed = yaml.safe_load("sources:" + block)["sources"]
    assert len(listed) == len(result.sources) and all("sha256" in s for s in listed)
    index = (settings.udm_root / "appendices" / "00-appendix-index.md").read_text(encoding="utf-8")
    assert f"[{result.appendix_id}]({result.appendix_id}.md#" in index

    # Again: fetches come from the Prefect cache (the site is not asked again), a V2 is written.
    before = site.hits["/article.html"]
    again = run_research(request, settings)
    assert again.status == "written" and again.appendix_id.endswith("-V2")
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


def test_research_rerun_with_the_same_sources_is_unchanged(
    prefect_server: None, site, workspace: Path
) -> None:
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
    again = run_research(request, settings)
    assert again.status == "unchanged" and again.appendix_id == first.appendix_id, again.message
    assert again.update is None
    assert not (settings.udm_root / first.appendix_path.replace("-V1", "-V2")).exists()
    forced = run_research(request.model_copy(update={"new_version_if_unchanged": True}), settings)
    assert forced.status == "written" and forced.appendix_id.endswith("-V2"), forced.message
