"""The JSON-line worker processes (udm/workerproc.py): one client and one serving loop for SQL and SPARQL.

Both ends run for real: the SQL worker over a DuckDB index, the SPARQL worker over a pyoxigraph store.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest

from udm.config import Settings
from udm.errors import GraphTimeoutError, GraphUnavailableError, SqlQueryFailedError
from udm.graph.sparql import SparqlRunner
from udm.index import SqlLimits, UdmIndex, run_readonly_sql
from udm.index.sql import shared_runner
from udm.workerproc import LineWorker

REPO = Path(__file__).resolve().parents[2]
# Three triple patterns over 300 triples: 27 million solutions, far past any limit used here.
CROSS = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?p ?b . ?c ?q ?d . ?e ?r ?f }"
LONG_SCAN = "SELECT count(*) FROM range(100000000000) a"


@pytest.fixture(scope="module")
def rdf_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pyoxigraph store of 300 triples."""
    path = tmp_path_factory.mktemp("rdf") / "store"
    store = ox.Store(str(path))
    pred = ox.NamedNode("https://example.test/p")
    for i in range(300):
        store.add(ox.Quad(ox.NamedNode(f"https://example.test/n{i}"), pred, ox.Literal(str(i))))
    store.flush()
    del store
    return path


@pytest.fixture
def sparql() -> Iterator[SparqlRunner]:
    """A SPARQL worker of the test's own."""
    runner = SparqlRunner()
    yield runner
    runner.close()


def _kill_soon(runner: LineWorker, after_s: float) -> threading.Thread:
    """Kill the runner's worker process from outside after a while, as the OOM killer would."""

    def kill() -> None:
        time.sleep(after_s)
        proc = runner._proc
        assert proc is not None
        proc.kill()

    thread = threading.Thread(target=kill)
    thread.start()
    return thread


def test_a_sparql_worker_that_dies_mid_query_is_unavailable_and_the_next_query_answers(
    sparql: SparqlRunner, rdf_store: Path
) -> None:
    assert sparql.query(rdf_store, "ASK { ?s ?p ?o }").rows == [[True]]
    killer = _kill_soon(sparql, 0.3)
    with pytest.raises(
        GraphUnavailableError, match=r"the SPARQL worker ended unexpectedly \(exit status -9\)"
    ):
        sparql.query(rdf_store, CROSS, timeout_s=30)
    killer.join()
    assert sparql._proc is None and sparql.restarts == 0
    assert sparql.query(rdf_store, "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }").rows == [[300]]


def test_an_sql_worker_that_dies_mid_query_is_a_failed_query_and_the_next_query_answers(
    settings: Settings,
) -> None:
    index = UdmIndex(settings)
    index.refresh(full=True)
    limits = SqlLimits.from_settings(settings)
    assert run_readonly_sql(index, "SELECT 1", row_cap=1, timeout_s=30, limits=limits).rows == [[1]]
    runner = shared_runner(limits)
    killer = _kill_soon(runner, 0.3)
    with pytest.raises(SqlQueryFailedError, match=r"query failed: the SQL worker ended unexpectedly \(exit"):
        run_readonly_sql(index, LONG_SCAN, row_cap=1, timeout_s=30, limits=limits)
    killer.join()
    assert run_readonly_sql(index, "SELECT 2", row_cap=1, timeout_s=30, limits=limits).rows == [[2]]
    index.close()


def test_waiting_for_a_busy_worker_counts_against_the_limit(sparql: SparqlRunner, rdf_store: Path) -> None:
    sparql.query(rdf_store, "ASK { ?s ?p ?o }")  # a warm worker: no start inside the timings
    # Held past the whole limit: the busy error, at the limit.
    with sparql._lock:
        started = time.monotonic()
        with pytest.raises(GraphTimeoutError, match=r"SPARQL engine stayed busy past the 0\.3 s time limit"):
            sparql.query(rdf_store, CROSS, timeout_s=0.3)
        assert time.monotonic() - started < 1.0
    # Held for 0.6 s of a 1 s limit: the query gets what is left, not another full second.
    sparql._lock.acquire()
    threading.Timer(0.6, sparql._lock.release).start()
    started = time.monotonic()
    with pytest.raises(GraphTimeoutError, match=r"stopped at the 1 s time limit"):
        sparql.query(rdf_store, CROSS, timeout_s=1.0)
    assert time.monotonic() - started < 1.45
    assert sparql.restarts == 1


def _serve(args: list[str], lines: list[str]) -> list[dict[str, Any]]:
    """Start a worker as the runners do, send it these lines, and read every line it writes."""
    done = subprocess.run(
        [sys.executable, "-m", *args],
        input="".join(lines).encode(),
        capture_output=True,
        cwd=REPO,
        timeout=60,
        check=True,
    )
    return [json.loads(line) for line in done.stdout.decode().splitlines()]


def test_the_sparql_worker_answers_every_line_and_outlives_bad_requests(rdf_store: Path) -> None:
    good = json.dumps({"store": str(rdf_store), "query": "ASK { ?s ?p ?o }"})
    ready, not_json, no_store, answer = _serve(
        ["udm.graph.sparql_worker"], ["not json\n", "\n", '{"query": "ASK {}"}\n', good + "\n"]
    )
    assert ready["ready"] is True and isinstance(ready["pid"], int)
    assert not_json["ok"] is False and not_json["error"].startswith("JSONDecodeError: ")
    assert no_store == {"ok": False, "error": "KeyError: 'store'", "syntax": False}
    assert answer == {"ok": True, "vars": ["result"], "rows": [[True]], "truncated": False}


def test_the_sql_worker_answers_every_line_and_outlives_bad_requests(settings: Settings) -> None:
    index = UdmIndex(settings)
    index.refresh(full=True)
    index.close()
    limits = SqlLimits.from_settings(settings)
    request = {
        "db": str(index.db_path),
        "sql": "SELECT 'é' AS x",
        "row_cap": 5,
        "memory_limit": "256MB",
        "threads": 1,
        "temp_directory": str(limits.temp_directory),
        "temp_limit": "64MB",
        "busy_timeout_s": 5,
        "writer_flag": str(settings.state_path / "no-flag"),
    }
    args = ["udm.index.sql_worker", str(limits.address_space_bytes), str(64 * 1024 * 1024)]
    ready, not_json, no_db, answer = _serve(args, ["[1\n", "  \n", "{}\n", json.dumps(request) + "\n"])
    assert ready["ready"] is True and isinstance(ready["pid"], int)
    assert not_json["ok"] is False and not_json["kind"] == "failed"
    assert not_json["error"].startswith("JSONDecodeError: ")
    assert no_db == {"ok": False, "kind": "failed", "error": "KeyError: 'busy_timeout_s'"}
    assert answer["ok"] is True and answer["columns"] == ["x"] and answer["rows"] == [["é"]]
