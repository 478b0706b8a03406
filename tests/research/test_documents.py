"""documentFetchingParsingTool against a real loopback site: parsing, limits, guard, quality gate."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

import pytest

from tasks.base import ToolContext, TransientToolError, call_tool
from tasks.documents import DocType, DocumentFetchingParsingTool, detect_type
from udm.config import load_settings
from udm.errors import BlockedAddressError
from udm.net import AllowList, resolve_and_vet
from udm.net.guard import classify

TOOL = DocumentFetchingParsingTool()


def fetch(ctx: ToolContext, **raw: Any) -> dict[str, Any]:
    result = call_tool(TOOL, raw, ctx)
    assert result.envelope.data is not None, result.envelope.error
    return result.envelope.data


def test_article_is_cleaned_markdown_with_metadata(site, rctx) -> None:
    out = fetch(rctx, url=site.base + "/article.html")
    assert out["status"] == "SUCCESS"
    text = out["cleanedTextContent"]
    assert "BM25" in text and "## Ranking with BM25" in text
    for boilerplate in ("Accept all cookies", "About us", "All rights reserved"):
        assert boilerplate not in text
    meta = out["metadata"]
    assert meta["author"] == "Ada Example"
    assert meta["canonical_url"] == "https://datanotes.example/duckdb-fts"
    assert meta["site_name"] == "Data Notes"
    assert meta["date"] == "2025-03-14"
    assert meta["description"].startswith("How BM25")
    assert meta["content_hash"].startswith("sha256:") and meta["truncation_applied"] is False
    assert out["contentTypeDetected"] == "text/html"
    assert out["extractedTitle"]


def test_pdf_text_per_page_and_info(site, rctx) -> None:
    out = fetch(rctx, url=site.base + "/doc.pdf")
    assert out["status"] == "SUCCESS", out["errorDetails"]
    assert out["extractedTitle"] == "Index design notes"
    assert out["metadata"]["page_count"] == 2 and out["metadata"]["author"] == "Bea Writer"
    assert "<!-- page 2 -->" in out["cleanedTextContent"]


def test_text_and_markdown(site, rctx) -> None:
    txt = fetch(rctx, url=site.base + "/notes.txt")
    assert txt["status"] == "SUCCESS" and "never the truth" in txt["cleanedTextContent"]
    md = fetch(rctx, url=site.base + "/readme.md")
    assert md["contentTypeDetected"] == "text/markdown" and md["extractedTitle"] == "Readme title"


def test_wrong_content_type_is_corrected_by_the_bytes(site, rctx) -> None:
    pdf = fetch(rctx, url=site.base + "/pdf-as-html")
    assert pdf["status"] == "SUCCESS" and pdf["contentTypeDetected"] == "application/pdf"
    html = fetch(rctx, url=site.base + "/html-as-octet")
    assert html["status"] == "SUCCESS" and html["contentTypeDetected"] == "text/html"
    png = fetch(rctx, url=site.base + "/image.png")
    assert png["status"] == "ERROR_UNSUPPORTED_FORMAT" and "image/png" in png["errorDetails"]


def test_hint_overrides_detection(site, rctx) -> None:
    out = fetch(rctx, url=site.base + "/notes.txt", documentTypeHint="pdf")
    assert out["status"] == "ERROR_PARSE_FAILED" and "PDF" in out["errorDetails"]


@pytest.mark.parametrize(
    ("path", "reason"),
    [("/challenge", "challenge"), ("/login", "login wall"), ("/empty", "no main text")],
)
def test_quality_gate(site, rctx, path: str, reason: str) -> None:
    out = fetch(rctx, url=site.base + path)
    assert out["status"] == "ERROR_PARSE_FAILED"
    assert reason in out["errorDetails"] and out["cleanedTextContent"] is None


def test_endless_body_is_capped_and_truncated(site, rctx) -> None:
    out = fetch(rctx, url=site.base + "/endless", maxLengthBytes=50_000)
    assert out["status"] == "PARTIAL_SUCCESS_TRUNCATED"
    assert out["metadata"]["truncation_applied"] is True
    assert out["metadata"]["bytes_read"] == 50_000
    assert len(out["cleanedTextContent"].encode()) <= 50_000


def test_pdf_over_the_cap_is_too_large(site, rctx) -> None:
    out = fetch(rctx, url=site.base + "/doc.pdf", maxLengthBytes=500)
    assert out["status"] == "ERROR_TOO_LARGE"


def test_text_output_is_capped(site, rctx) -> None:
    cut_download = fetch(rctx, url=site.base + "/article.html", maxLengthBytes=1500)
    assert cut_download["status"] == "PARTIAL_SUCCESS_TRUNCATED"
    assert "DuckDB ships" in cut_download["cleanedTextContent"]
    assert "pins the DuckDB version" not in cut_download["cleanedTextContent"]
    cut_text = fetch(rctx, filePath="docs/udm/01-introduction.md", maxLengthBytes=120)
    assert cut_text["status"] == "PARTIAL_SUCCESS_TRUNCATED"
    assert len(cut_text["cleanedTextContent"].encode()) <= 120


def test_redirect_followed_and_recorded(site, rctx) -> None:
    out = fetch(rctx, url=site.base + "/redirect")
    assert out["status"] == "SUCCESS"
    assert out["urlFetched"].endswith("/article.html") and out["metadata"]["redirects"]


def test_redirect_to_private_address_is_refused_and_never_connected(site, rctx) -> None:
    out = fetch(rctx, url=site.base + "/redirect-private")
    assert out["status"] == "ERROR_FETCH_FAILED"
    assert "127.0.0.2" in out["errorDetails"] and "loopback" in out["errorDetails"]
    assert site.trap_hits == [] and site.trap_connections == []


def test_direct_private_address_refused(site, rctx) -> None:
    out = fetch(rctx, url=site.trap_url)
    assert out["status"] == "ERROR_FETCH_FAILED" and "refused" in out["errorDetails"]
    assert site.trap_connections == []


def test_without_allow_list_loopback_is_refused(site, workspace: Path) -> None:
    ctx = ToolContext(settings=load_settings(cwd=workspace))
    out = fetch(ctx, url=site.base + "/article.html")
    assert out["status"] == "ERROR_FETCH_FAILED" and "loopback" in out["errorDetails"]
    assert site.hits["/article.html"] == 0


def test_redirect_limits_and_schemes(site, rctx) -> None:
    loop = fetch(rctx, url=site.base + "/redirect-loop")
    assert loop["status"] == "ERROR_FETCH_FAILED" and "redirects" in loop["errorDetails"]
    ftp = fetch(rctx, url=site.base + "/redirect-ftp")
    assert ftp["status"] == "ERROR_FETCH_FAILED" and "http and https" in ftp["errorDetails"]


def test_html_encoding_from_meta_or_windows_1252(site, rctx) -> None:
    latin = fetch(rctx, url=site.base + "/latin1.html")
    assert latin["status"] == "SUCCESS"
    assert "café's naïve résumés" in latin["cleanedTextContent"]
    undeclared = fetch(rctx, url=site.base + "/cp1252.html")
    assert undeclared["status"] == "SUCCESS"
    assert "\u201csmart quotes\u201d and cafés" in undeclared["cleanedTextContent"]
    assert "\ufffd" not in undeclared["cleanedTextContent"]


def test_invalid_port_is_invalid_input(rctx) -> None:
    # A malformed URL from the caller is the caller's mistake (#17.8), not a failed fetch.
    out = fetch(rctx, url="http://127.0.0.1:99999/page")
    assert out["status"] == "ERROR_INVALID_INPUT" and "invalid port in URL" in out["errorDetails"]


def test_robots_txt_honoured_and_cached(site, rctx, workspace: Path) -> None:
    out = fetch(rctx, url=site.base + "/private/page.html")
    assert out["status"] == "ERROR_FETCH_FAILED" and "robots.txt" in out["errorDetails"]
    assert site.hits["/private/page.html"] == 0
    fetch(rctx, url=site.base + "/article.html")
    assert site.hits["/robots.txt"] == 1
    off = ToolContext(
        settings=load_settings(cwd=workspace, fetch_allow=["127.0.0.1"], fetch_respect_robots=False)
    )
    assert fetch(off, url=site.base + "/private/page.html")["status"] == "SUCCESS"


def test_conditional_request_uses_the_cache(site, rctx) -> None:
    first = fetch(rctx, url=site.base + "/article.html")
    second = fetch(rctx, url=site.base + "/article.html")
    assert first["metadata"]["from_cache"] is False and second["metadata"]["from_cache"] is True
    assert second["cleanedTextContent"] == first["cleanedTextContent"]
    assert second["metadata"]["content_hash"] == first["metadata"]["content_hash"]
    blobs = list((rctx.settings.state_path / "fetch-cache" / "blobs").iterdir())
    assert [b.name for b in blobs] == [first["metadata"]["content_hash"].removeprefix("sha256:")]


def test_transient_failures_raise_for_retries(site, rctx) -> None:
    with pytest.raises(TransientToolError) as slow:
        call_tool(TOOL, {"url": site.base + "/slow"}, rctx, raise_transient=True)
    assert "timed out" in str(slow.value)
    with pytest.raises(TransientToolError) as limited:
        call_tool(TOOL, {"url": site.base + "/ratelimited"}, rctx, raise_transient=True)
    assert limited.value.retry_after == 1.0
    again = call_tool(TOOL, {"url": site.base + "/ratelimited"}, rctx, raise_transient=True)
    assert again.envelope.success
    with pytest.raises(TransientToolError):
        call_tool(TOOL, {"url": site.base + "/flaky"}, rctx, raise_transient=True)
    # Without raise_transient (no retries left) the error status comes back instead.
    down = fetch(rctx, url=site.base + "/always-500")
    assert down["status"] == "ERROR_FETCH_FAILED" and "503" in down["errorDetails"]


def test_client_errors_are_permanent(site, rctx) -> None:
    out = call_tool(TOOL, {"url": site.base + "/missing"}, rctx, raise_transient=True)
    assert out.envelope.data and out.envelope.data["status"] == "ERROR_FETCH_FAILED"
    assert "404" in out.envelope.data["errorDetails"]


def test_section_keywords_put_matching_passages_first(site, rctx) -> None:
    out = fetch(rctx, url=site.base + "/article.html", sectionKeywords=["offline", "extension file"])
    assert out["cleanedTextContent"].startswith("## Offline installation")
    assert out["metadata"]["passages_matching_keywords"] >= 1


def test_file_path_goes_through_the_sandbox(rctx, workspace: Path) -> None:
    out = fetch(rctx, filePath="docs/udm/01-introduction.md")
    assert out["status"] == "SUCCESS" and out["contentTypeDetected"] == "text/markdown"
    assert out["filePathProcessed"].endswith("01-introduction.md")
    outside = fetch(rctx, filePath="../../etc/passwd")
    assert outside["status"] == "ERROR_INVALID_INPUT"
    missing = fetch(rctx, filePath="docs/udm/nope.md")
    assert missing["status"] == "ERROR_FETCH_FAILED"


def test_input_validation(rctx) -> None:
    both = call_tool(TOOL, {"url": "http://a.example/", "filePath": "x.md"}, rctx)
    assert not both.envelope.success and "exactly one" in (both.envelope.error or "")
    neither = call_tool(TOOL, {}, rctx)
    assert not neither.envelope.success
    bad = fetch(rctx, url="file:///etc/passwd")
    assert bad["status"] == "ERROR_INVALID_INPUT"
    too_big = call_tool(TOOL, {"url": "http://a.example/", "maxLengthBytes": 0}, rctx)
    assert "maxLengthBytes" in (too_big.envelope.error or "")


def test_detect_type_rules() -> None:
    assert detect_type(DocType.AUTO, "", b"%PDF-1.7 ...", "x")[0] == "pdf"
    assert detect_type(DocType.AUTO, "text/plain", b"<!DOCTYPE html><html>", "x")[0] == "html"
    assert detect_type(DocType.AUTO, "", b"# Title\n", "notes.md")[0] == "markdown"
    assert detect_type(DocType.AUTO, "application/zip", b"PK\x03\x04", "a.zip") == (None, "application/zip")
    assert detect_type(DocType.TXT, "", b"", "x")[0] == "text"


def test_netguard_classification_and_allow_list() -> None:
    ip = ipaddress.ip_address
    assert classify(ip("169.254.169.254")) == "cloud metadata"
    assert classify(ip("10.1.2.3")) == "private"
    assert classify(ip("::ffff:127.0.0.1")) == "loopback"
    assert classify(ip("224.0.0.1")) == "multicast"
    assert classify(ip("93.184.215.14")) is None
    allow = AllowList.parse(["127.0.0.1", "10.0.0.0/8", "intranet.local"])
    assert resolve_and_vet("127.0.0.1", 80, allow).ip == "127.0.0.1"
    assert resolve_and_vet("10.9.9.9", 80, allow).ip == "10.9.9.9"
    with pytest.raises(BlockedAddressError, match="loopback"):
        resolve_and_vet("127.0.0.2", 80, allow)
    with pytest.raises(BlockedAddressError, match="metadata"):
        resolve_and_vet("169.254.169.254", 80, allow)
    with pytest.raises(BlockedAddressError, match="loopback"):
        resolve_and_vet("localhost", 80, AllowList.parse([]))
