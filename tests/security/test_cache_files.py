"""Hostile cache files: nothing the engine reads back from disk can run code, and a bad cache is rebuilt.

The attack of #17.1: one approved `writeFile` of a crafted pickle to `state/graph/<fp>/graph.pickle`,
then any graph query (permission safe). Each case plants the file (through the tool, and directly,
as if the boundary had been crossed some other way) and asserts no marker file appears and the
query still answers from the manual.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pickle
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from tasks.base import ToolContext, always_approve, call_tool
from tasks.filesystem import FileSystemAccessTool
from tasks.knowledge_graph import KnowledgeGraphQueryTool
from tests.fakes.loopback import loopback_server
from udm.config import Settings, load_settings
from udm.graph import open_graph
from udm.graph.cache import (
    CACHE_NAME,
    MAX_CACHE_BYTES,
    CacheInvalid,
    dump_graph,
    graph_from_data,
    graph_to_data,
    read_graph,
)
from udm.graph.model import GraphRows
from udm.graph.store import clear_cache, graph_from_rows
from udm.net import fetch_url

SAMPLE_UDM = Path(__file__).resolve().parents[2] / "examples" / "udm"
T001 = "TASK-P0-M0.1-T001"
DEPENDENTS_OF_T001 = {
    "TASK-P0-M0.1-T002",
    "TASK-P0-M0.1-T004",
    "TASK-P0-M0.1-T005",
    "TASK-P0-M0.1-T006",
    "TASK-P0-M0.1-T007",
}


class _Payload:
    """Unpickling this writes the marker file: proof that a load executed code."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.write_text, (self.marker, "code ran"))


def _ask(ctx: ToolContext) -> dict[str, Any]:
    result = call_tool(
        KnowledgeGraphQueryTool(),
        {"queryLanguage": "natural_language", "query": f"What depends on {T001}?"},
        ctx,
    )
    assert result.envelope.data is not None, result.envelope.error
    return result.envelope.data


def _graph_folder(settings: Settings) -> Path:
    clear_cache()
    return open_graph(settings).folder


@pytest.fixture(scope="module")
def kg_ctx(tmp_path_factory: pytest.TempPathFactory) -> ToolContext:
    """One copy of the sample manual for the tampering cases (each case rewrites the cache first)."""
    base = tmp_path_factory.mktemp("cache-files")
    shutil.copytree(SAMPLE_UDM, base / "docs" / "udm")
    return ToolContext(settings=load_settings(cwd=base), approver=always_approve)


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    """Where a payload would write; it must never exist."""
    return tmp_path / "marker-code-ran"


def test_a_pickle_written_by_the_file_tool_never_runs(ctx: ToolContext, marker: Path) -> None:
    folder = _graph_folder(ctx.settings)
    rel = os.path.relpath(folder / "graph.pickle", ctx.settings.project_root)
    crafted = pickle.dumps(_Payload(marker))
    env = call_tool(
        FileSystemAccessTool(),
        {
            "action": "writeFile",
            "filePath": rel,
            "content": base64.b64encode(crafted).decode(),
            "encoding": "base64",
        },
        ctx,
    ).envelope
    clear_cache()  # a new process: nothing in memory
    out = _ask(ctx)
    assert not marker.exists(), "the planted pickle ran"
    assert out["status"] == "SUCCESS" and {r["id"] for r in out["results"]} == DEPENDENTS_OF_T001
    assert env.data is not None and env.data["status"] == "ERROR_PERMISSION_DENIED", env
    assert not (folder / "graph.pickle").exists()


@pytest.mark.parametrize("name", ["graph.pickle", CACHE_NAME])
def test_a_planted_pickle_is_never_loaded(kg_ctx: ToolContext, marker: Path, name: str) -> None:
    ctx = kg_ctx
    folder = _graph_folder(ctx.settings)
    (folder / name).unlink(missing_ok=True)
    (folder / name).write_bytes(pickle.dumps(_Payload(marker)))
    clear_cache()
    out = _ask(ctx)
    assert out["status"] == "SUCCESS" and {r["id"] for r in out["results"]} == DEPENDENTS_OF_T001
    assert not marker.exists()
    # The refused cache was replaced by a good one: the next process loads it.
    clear_cache()
    handle = open_graph(ctx.settings)
    assert handle.cache == "loaded", handle.cache


def _tamper_cases() -> dict[str, Any]:
    def edit(fn: Any) -> Any:
        def apply(data: dict[str, Any]) -> bytes:
            fn(data)
            return json.dumps(data).encode()  # the standard library writes integers of any size

        return apply

    def first_edges(data: dict[str, Any]) -> list[Any]:
        edges: list[Any] = data["edges"][sorted(data["edges"])[0]]
        return edges

    return {
        "garbage": lambda data: b"\x00\xff not json at all",
        "truncated": lambda data: orjson.dumps(data)[:-100],
        "a list": lambda data: b"[1, 2, 3]",
        "deep nesting": lambda data: b"[" * 100_000 + b"]" * 100_000,
        "other fingerprint": edit(lambda d: d.update(fingerprint="0" * 20)),
        "other schema": edit(lambda d: d.update(schema="kg-0")),
        "extra field": edit(lambda d: d.update(code="import os")),
        "unknown kind": edit(lambda d: d["nodes"][0].update(kind="exploit")),
        "unknown property": edit(lambda d: d["nodes"][0].update(__class__="os.system")),
        "property of the wrong type": edit(lambda d: d["nodes"][0].update(line="12")),
        "bool as a number": edit(lambda d: d["nodes"][0].update(line=True)),
        "number too big": edit(lambda d: d["nodes"][0].update(level=2**70)),
        "duplicate node": edit(lambda d: d["nodes"].append(dict(d["nodes"][0]))),
        "node without id": edit(lambda d: d["nodes"][0].pop("id")),
        "edge to nowhere": edit(lambda d: first_edges(d).__setitem__(1, 10**9)),
        "negative index": edit(lambda d: first_edges(d).__setitem__(0, -1)),
        "edge by name": edit(lambda d: first_edges(d).__setitem__(0, T001)),
        "float index": edit(lambda d: first_edges(d).__setitem__(0, 0.0)),
        "bool index": edit(lambda d: first_edges(d).__setitem__(0, True)),
        "unknown edge type": edit(lambda d: d["edges"].update(__reduce__=[0, 1])),
        "duplicate edge": edit(lambda d: first_edges(d).extend(first_edges(d)[:2])),
        "odd edge list": edit(lambda d: first_edges(d).append(0)),
        "edges as triples": edit(lambda d: d.update(edges=[[0, "part_of", 1]])),
        "huge string": edit(lambda d: d["nodes"][0].update(title="x" * 1_000_001)),
    }


@pytest.mark.parametrize("case", sorted(_tamper_cases()))
def test_a_tampered_cache_is_rebuilt(kg_ctx: ToolContext, case: str) -> None:
    ctx = kg_ctx
    folder = _graph_folder(ctx.settings)
    cache = folder / CACHE_NAME
    raw = cache.read_bytes()
    good = orjson.loads(raw)
    cache.write_bytes(_tamper_cases()[case](orjson.loads(raw)))
    clear_cache()
    handle = open_graph(ctx.settings)
    assert handle.cache.startswith("rebuilt: "), handle.cache
    out = _ask(ctx)
    assert out["status"] == "SUCCESS" and {r["id"] for r in out["results"]} == DEPENDENTS_OF_T001
    assert orjson.loads(cache.read_bytes()) == good  # rewritten with the real graph


def test_a_symlink_or_fifo_in_place_of_the_cache_is_refused(kg_ctx: ToolContext, tmp_path: Path) -> None:
    ctx = kg_ctx
    folder = _graph_folder(ctx.settings)
    cache = folder / CACHE_NAME
    outside = tmp_path / "elsewhere.json"
    outside.write_bytes(cache.read_bytes())
    cache.unlink()
    cache.symlink_to(outside)
    clear_cache()
    assert open_graph(ctx.settings).cache.startswith("rebuilt: ")
    cache.unlink()
    os.mkfifo(cache)
    clear_cache()
    handle = open_graph(ctx.settings)  # O_NONBLOCK: a FIFO without a writer never hangs the read
    assert handle.cache.startswith("rebuilt: ") and "regular file" in handle.cache
    assert (folder / CACHE_NAME).is_file() and not (folder / CACHE_NAME).is_symlink()


def test_an_oversized_cache_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / CACHE_NAME
    with open(path, "wb") as fh:
        fh.truncate(MAX_CACHE_BYTES + 1)  # sparse: no disk used
    with pytest.raises(CacheInvalid, match="limit"):
        read_graph(path, "fp")


def test_the_stores_beside_a_refused_cache_are_rebuilt(tmp_path: Path) -> None:
    rows = _rows()
    handle = graph_from_rows(rows, tmp_path)
    handle.cypher("MATCH (t:task) RETURN t.id")
    assert (handle.folder / "cypher.lbug").exists()
    handle.close()
    (handle.folder / CACHE_NAME).write_bytes(b"{}")
    clear_cache()
    again = graph_from_rows(rows, tmp_path)
    assert again.cache.startswith("rebuilt: ")
    assert not (again.folder / "cypher.lbug").exists()
    assert again.cypher("MATCH (t:task) RETURN t.id ORDER BY t.id").rows == [["T-1"], ["T-2"]]
    again.close()
    clear_cache()


def _rows() -> GraphRows:
    return GraphRows(
        files=[{"path": "a.md", "hash": "h"}],
        sections=[{"file": "a.md", "anchor": "a", "title": "A", "level": 1, "line": 1, "parent": None}],
        tasks=[{"id": "T-1", "title": "one"}, {"id": "T-2", "title": "two", "depends_on": ["T-1"]}],
    )


def test_the_sample_graph_round_trips_exactly(settings: Settings) -> None:
    clear_cache()
    kg = open_graph(settings).kg
    back = graph_from_data(orjson.loads(dump_graph(kg)), kg.fingerprint)
    assert dict(back.g.nodes(data=True)) == dict(kg.g.nodes(data=True))
    assert sorted(back.edges()) == sorted(kg.edges())
    clear_cache()


_scalar = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5), st.floats(allow_nan=False))
_json = st.recursive(
    _scalar,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@hsettings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    node_patch=st.dictionaries(st.sampled_from(["id", "kind", "title", "line", "defined", "x"]), _json),
    edge_type=st.sampled_from(["depends_on", "part_of", "x"]),
    edges=_json | st.lists(st.integers(min_value=-2, max_value=8), max_size=8),
)
def test_any_mutation_is_a_graph_or_a_clear_refusal(
    node_patch: dict[str, Any], edge_type: str, edges: Any
) -> None:
    kg = graph_from_data(graph_to_data(graph_from_rows_fast()), FP)
    data = graph_to_data(kg)
    data["nodes"][0].update(node_patch)
    data["edges"][edge_type] = edges
    try:
        back = graph_from_data(data, FP)
    except CacheInvalid as exc:
        assert str(exc)
        return
    # Accepted: then it is a well-formed graph of known kinds and edge types.
    assert all(isinstance(n, str) for n in back.g)
    assert all(isinstance(t, str) for _, t, _ in back.edges())


FP = "f" * 20


def graph_from_rows_fast() -> Any:
    """A small graph built in memory (no stores)."""
    from udm.graph.model import build_graph

    kg = build_graph(_rows())
    kg.fingerprint = FP
    return kg


# -- the fetch cache: its metadata names the blob to serve, so it is checked before it is used -------


class _ETagHandler(BaseHTTPRequestHandler):
    """One page with an ETag; a conditional request with that ETag gets 304."""

    body = b"<html><body><p>the real page</p></body></html>"

    def do_GET(self) -> None:
        if self.headers.get("If-None-Match") == '"v1"':
            self.send_response(304)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("ETag", '"v1"')
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: Any) -> None:
        """Quiet."""


@contextmanager
def _server() -> Iterator[str]:
    with loopback_server(_ETagHandler) as base:
        yield base + "/page"


def _meta_file(settings: Settings, url: str) -> Path:
    return settings.state_path / "fetch-cache" / "urls" / (hashlib.sha256(url.encode()).hexdigest() + ".json")


@pytest.mark.parametrize(
    "tamper",
    ["hash names a path outside the cache", "blob replaced", "metadata of another URL", "not an object"],
)
def test_a_tampered_fetch_cache_entry_is_a_miss(workspace: Path, tamper: str) -> None:
    settings = load_settings(cwd=workspace, fetch_allow=["127.0.0.1"], fetch_respect_robots=False)
    secret = workspace / "secret.txt"
    secret.write_bytes(b"TOP-SECRET outside the cache")
    with _server() as url:
        first = fetch_url(url, settings, 1 << 20)
        meta_file = _meta_file(settings, url)
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
        blob = settings.state_path / "fetch-cache" / "blobs" / meta["content_hash"].removeprefix("sha256:")
        if tamper == "hash names a path outside the cache":
            meta["content_hash"] = "sha256:../../../secret.txt"
        elif tamper == "blob replaced":
            blob.write_bytes(b"planted body")
        elif tamper == "metadata of another URL":
            meta["url"] = url + "?other"
        else:
            meta = ["not", "an", "object"]  # type: ignore[assignment]
        meta_file.write_text(json.dumps(meta), encoding="utf-8")
        again = fetch_url(url, settings, 1 << 20)
    assert again.content == first.content == _ETagHandler.body
    assert again.from_cache is False


def test_an_intact_fetch_cache_entry_is_still_used(workspace: Path) -> None:
    settings = load_settings(cwd=workspace, fetch_allow=["127.0.0.1"], fetch_respect_robots=False)
    with _server() as url:
        fetch_url(url, settings, 1 << 20)
        again = fetch_url(url, settings, 1 << 20)
    assert again.from_cache is True and again.content == _ETagHandler.body
