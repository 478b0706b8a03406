"""Fixtures of the knowledge-graph tests: one copy of the sample UDM per module, hand-made rows."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tasks.base import ToolContext, always_approve
from udm.config import Settings, load_settings
from udm.graph import open_graph
from udm.graph.model import GraphRows, section_node_id
from udm.graph.store import GraphHandle, clear_cache, graph_from_rows

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "udm"


@pytest.fixture(scope="session")
def sample_settings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    """Settings over a private copy of the sample UDM, shared by the graph tests (built once)."""
    base = tmp_path_factory.mktemp("kg-sample")
    shutil.copytree(SAMPLE, base / "docs" / "udm")
    for sub in ("state", "logs"):
        (base / sub).mkdir()
    yield load_settings(cwd=base)
    clear_cache()


@pytest.fixture(scope="session")
def sample_graph(sample_settings: Settings) -> GraphHandle:
    """The graph of the sample UDM."""
    return open_graph(sample_settings)


@pytest.fixture
def kg_ctx(sample_settings: Settings) -> ToolContext:
    """A tool context over the sample copy."""
    return ToolContext(settings=sample_settings, approver=always_approve, log=False)


@pytest.fixture(scope="module")
def small_graph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraphHandle]:
    """Query stores over the hand-made rows (built once per module)."""
    handle = graph_from_rows(small_rows(), tmp_path_factory.mktemp("kg-rows"))
    yield handle
    handle.close()


def small_rows(cyclic: bool = False) -> GraphRows:
    """A hand-made manual: 5 tasks in a diamond plus a tail, 1 component, 1 mode, 1 tool, 1 check."""
    s = lambda anchor: section_node_id("plan.md", anchor)  # noqa: E731
    rows = GraphRows(
        files=[{"path": "plan.md", "hash": "h1"}],
        sections=[
            {"file": "plan.md", "anchor": "plan", "title": "Plan", "level": 1, "line": 1, "parent": None},
            {
                "file": "plan.md",
                "anchor": "tasks",
                "title": "Tasks",
                "level": 2,
                "line": 5,
                "parent": s("plan"),
            },
            {
                "file": "plan.md",
                "anchor": "arch",
                "title": "Arch",
                "level": 2,
                "line": 40,
                "parent": s("plan"),
            },
        ],
        ids=[
            {"id": "COMP-001", "file": "plan.md", "line": 41, "section": s("arch"), "role": "definition"},
            {"id": "COMP-001", "file": "plan.md", "line": 7, "section": s("tasks"), "role": "reference"},
            {"id": "RM-009", "file": "plan.md", "line": 42, "section": s("arch"), "role": "definition"},
        ],
        tasks=[
            {
                "id": "TASK-P0-M0.1-T001",
                "title": "Root",
                "status": "done",
                "mode": "ROO-MODE-BUILD",
                "depends_on": [],
            },
            {
                "id": "TASK-P0-M0.1-T002",
                "title": "Left",
                "status": "todo",
                "mode": "ROO-MODE-BUILD",
                "depends_on": ["TASK-P0-M0.1-T001"],
            },
            {
                "id": "TASK-P0-M0.1-T003",
                "title": "Right",
                "status": "todo",
                "depends_on": ["TASK-P0-M0.1-T001"],
            },
            {
                "id": "TASK-P0-M0.1-T004",
                "title": "Join",
                "status": "todo",
                "depends_on": ["TASK-P0-M0.1-T002", "TASK-P0-M0.1-T003"],
            },
            {
                "id": "TASK-P0-M0.1-T005",
                "title": "Tail",
                "status": "todo",
                "depends_on": ["TASK-P0-M0.1-T004"],
            },
        ],
        modes=[{"id": "ROO-MODE-BUILD", "title": "Build", "tools": ["fileSystemAccessTool"]}],
        tools=[{"id": "fileSystemAccessTool", "description": "files"}],
        components=[{"id": "COMP-001", "title": "Core", "owner": ["ROO-MODE-BUILD"]}],
        links=[
            {"section": s("tasks"), "target": "https://example.org/doc", "kind": "external"},
            {"section": s("tasks"), "target": "#arch", "kind": "anchor", "target_section": s("arch")},
        ],
        checks=[{"id": "CHK-CORE", "section": s("arch"), "refs": ["COMP-001"], "url": "http://127.0.0.1/"}],
    )
    if cyclic:
        rows.tasks[0]["depends_on"] = ["TASK-P0-M0.1-T004"]
    return rows
