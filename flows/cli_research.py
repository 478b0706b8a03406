"""`udm research`: run the research flow from the terminal; plus the demo's offline research step."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import typer

from flows.cli import emit_json, fail, settings
from flows.say import say
from tasks.base import Permission, cli_approver, needs_approval

__all__ = ["DEMO_PAGES", "register", "research", "serve_pages", "step_research"]

DEMO_PAGES = Path(__file__).resolve().parent.parent / "examples" / "research"


def research(
    question: str = typer.Argument(..., help="The research question."),
    query: list[str] = typer.Option(
        [], "--query", "-q", help="A search query (repeatable; default: the question)."
    ),
    url: list[str] = typer.Option([], "--url", "-u", help="A URL to read in any case (repeatable)."),
    file: list[str] = typer.Option([], "--file", "-f", help="A local file to read (repeatable)."),
    library: list[str] = typer.Option(
        [], "--library", "-l", help="A library to look up in Context7 (repeatable)."
    ),
    sub_question: list[str] = typer.Option(
        [], "--sub-question", "-s", help="A part of the question to group findings by (repeatable)."
    ),
    include_manual: bool = typer.Option(
        False, "--include-manual", help="Cite the manual's own files found by search (default: context only)."
    ),
    topic: str | None = typer.Option(
        None, "--topic", help="Appendix topic, e.g. DUCKDB-FTS (default: from the question)."
    ),
    max_sources: int = typer.Option(10, "--max-sources", help="Most sources to read."),
    max_age: int = typer.Option(
        86400, "--max-age", help="Reuse cached fetches younger than this many seconds."
    ),
    no_write: bool = typer.Option(False, "--no-write", help="Only report; do not write the appendix."),
    new_version: bool = typer.Option(
        False, "--new-version", help="Write a new version even if the newest one has the same sources."
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="Approve the write without asking."),
    timeout_s: int = typer.Option(
        3600, "--timeout", help="How long to wait for a reviewer in the Prefect UI."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Search, read and cite sources, then write a research appendix into the manual (Prefect flow).

    Long only for its typer options (why: one per request field); the body builds the request, then
    `_write_policy` and `_print_result` do the rest."""
    from pydantic import ValidationError

    from flows.research import ResearchRequest, run_research

    try:
        request = ResearchRequest(
            question=question,
            queries=query,
            urls=url,
            files=file,
            libraries=library,
            sub_questions=sub_question,
            include_manual=include_manual,
            topic=topic,
            max_sources=max_sources,
            max_cache_age_s=max_age,
            write=not no_write,
            new_version_if_unchanged=new_version,
        )
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise fail(f"invalid request: {problems}", 2) from None
    s = settings()
    policy, ask_here = _write_policy(s, yes=yes, no_write=no_write)
    with _reviewed_here(ask_here):
        result = run_research(request, s, policy=policy, approval_timeout_s=timeout_s)
    if as_json:
        emit_json(result.model_dump(mode="json", exclude={"markdown"}))
    else:
        _print_result(result, s.udm_root)
    if result.status not in ("written", "unchanged", "reported"):
        raise typer.Exit(1)


def _write_policy(s: Any, *, yes: bool, no_write: bool) -> tuple[str | None, bool]:
    """(the policy the run writes under, whether its review is asked here at the terminal): full_auto
    with --yes; else the settings' own, reviewed in the Prefect UI, or here when the run's temporary
    Prefect server has no UI anyone could approve in."""
    if yes:
        return "full_auto", False
    if no_write or not needs_approval(s.approval_policy, Permission.MODERATE):
        return None, False
    if os.environ.get("PREFECT_API_URL"):
        say("the write will pause for approval in the Prefect UI (or pass --yes)", err=True)
        return None, False
    if not sys.stdin.isatty():
        # Said before the research runs: its write could be asked nowhere.
        raise fail(
            "writing the appendix (udmUpdaterTool, moderate) needs approval and there is no terminal "
            "to ask: pass --yes, or set UDM_APPROVAL_POLICY; or --no-write"
        )
    return None, True


@contextlib.contextmanager
def _reviewed_here(ask_here: bool) -> Iterator[None]:
    """The write's review asked at this terminal, with udmUpdaterTool's own approval request and the
    appendix's diff, once the appendix is known; nothing when `ask_here` is false."""
    if not ask_here:
        yield
        return
    from flows.udm_update import review_here

    with review_here(cli_approver(False)):
        yield


def _print_result(result: Any, udm_root: Path) -> None:
    """The run's outcome, one line per source, the counts and any unsupported claim."""
    say(f"{result.appendix_id}: {result.status} — {result.message}")
    for src in result.sources:
        mark = "ok " if src["status"] == "ok" else ("dup" if src["status"] == "DUPLICATE" else "ERR")
        reason = f"  ({src['reason'][:100]})" if src.get("reason") else ""
        say(f"  [{src['n']}] {mark} {src['url']}{reason}")
    say(
        f"{result.sources_ok} of {len(result.sources)} sources usable; {result.findings} claims cited"
        f" ({result.synthesizer or 'extractive'})"
    )
    for claim in result.unsupported:
        say(f"  unsupported, not published: {claim['text'][:100]} ({claim['reason']})")
    if result.status in ("written",):
        say(f"written: {udm_root / result.appendix_path}")


class _QuietHandler(SimpleHTTPRequestHandler):
    """Static files without a log line per request."""

    def log_message(self, *args: Any) -> None:
        pass


def serve_pages(directory: Path = DEMO_PAGES) -> tuple[ThreadingHTTPServer, str]:
    """Serve `directory` on 127.0.0.1 (a free port) in a daemon thread; returns (server, base URL)."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def step_research(ws: Any) -> None:
    """Demo: research offline — the udm search provider, a local file, and pages served on 127.0.0.1."""
    from flows.research import ResearchRequest, run_research
    from udm.config import load_settings

    server, base = serve_pages()
    ws.say(f"   serving examples/research at {base} (allow-listed: 127.0.0.1 only)")
    s = load_settings(
        cwd=ws.path,
        root=ws.settings.udm_root,
        state_dir=ws.settings.state_path,
        logs_dir=ws.settings.logs_path,
        fetch_allow=["127.0.0.1"],
        search_provider="udm",
        approval_policy="full_auto",
    )
    request = ResearchRequest(
        question="How should the search index rank passages with BM25 and handle concurrent readers?",
        queries=["BM25 ranking passages", "index concurrency readers"],
        urls=[
            f"{base}/bm25-ranking.html",
            f"{base}/embedded-index-concurrency.html",
            f"{base}/index-notes.md",
            f"{base}/drafts/unpublished.html",  # disallowed by robots.txt: shows as a failed source
            "http://127.0.0.2/metadata",  # not allow-listed: refused before any connection
        ],
        files=[str(ws.settings.udm_root / "02-system-architecture.md")],
        sub_questions=[
            "How should the search index rank passages with BM25?",
            "How should the index handle concurrent readers?",
        ],
        topic="INDEX-RANKING",
        max_sources=10,
    )
    try:
        result = run_research(request, s)
    finally:
        server.shutdown()
        server.server_close()
    for src in result.sources:
        reason = f" — {src['reason'][:110]}" if src.get("reason") else ""
        ws.say(f"   [{src['n']}] {src['status']:<20} {src['url'][-70:]}{reason}")
    ws.say(f"   {result.appendix_id}: {result.status} — {result.message}")
    ws.say(f"   phases (s): {result.timings_s}")
    if result.status != "written":
        raise RuntimeError(f"the research appendix was not written: {result.message}")
    failed = {s["url"].rsplit("/", 1)[-1]: s for s in result.sources if s["status"] != "ok"}
    if "unpublished.html" not in failed or "metadata" not in failed:
        raise RuntimeError("robots.txt or the SSRF guard did not refuse what it must")


def register(app: typer.Typer) -> None:
    """Add the research command."""
    # The help is the docstring's first line: the rest of it is for readers of the code.
    app.command("research", help=(research.__doc__ or "").split("\n", 1)[0])(research)
