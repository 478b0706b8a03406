"""The parse pool: documents parsed in worker processes give the same result as parsing in place."""

from __future__ import annotations

import os
from typing import Any

from tasks.base import ToolContext, call_tool
from tasks.documents import DocumentFetchingParsingTool
from udm.net import parse_pool, run_parser, workers_for
from udm.net.parsing_pool import pool_size

TOOL = DocumentFetchingParsingTool()


def _fetch(ctx: ToolContext, **raw: Any) -> dict[str, Any]:
    result = call_tool(TOOL, raw, ctx)
    assert result.envelope.data is not None, result.envelope.error
    data = dict(result.envelope.data)
    data["metadata"] = {k: v for k, v in data["metadata"].items() if k not in ("fetched_at", "from_cache")}
    return data


def test_run_parser_uses_a_worker_process_only_inside_the_pool() -> None:
    assert run_parser(os.getpid) == os.getpid() and pool_size() == 0
    with parse_pool(2) as size:
        assert size == 2 and pool_size() == 2
        with parse_pool(4) as nested:  # a second user shares the running pool
            assert nested == 2
        assert run_parser(os.getpid) != os.getpid()
    assert pool_size() == 0 and run_parser(os.getpid) == os.getpid()
    with parse_pool(0) as none:
        assert none == 0 and run_parser(os.getpid) == os.getpid()


def test_workers_for_setting() -> None:
    assert workers_for(0) == 0 and workers_for(3) == 3
    cores = len(os.sched_getaffinity(0))
    assert workers_for(-1) == (cores if cores >= 2 else 0)


def test_pool_parses_html_and_pdf_exactly_as_in_place_and_keeps_the_quality_gate(site, rctx) -> None:
    urls = [site.base + p for p in ("/article.html", "/doc.pdf", "/challenge")]
    here = [_fetch(rctx, url=u) for u in urls]
    with parse_pool(2):
        pooled = [_fetch(rctx, url=u) for u in urls]
    assert pooled == here
    assert [d["status"] for d in here] == ["SUCCESS", "SUCCESS", "ERROR_PARSE_FAILED"]
    assert pooled[2]["errorDetails"]  # the gate's reason crossed the process boundary
