"""The state boundary (#17.3): no tool reads or writes the engine's state folder; scratch is theirs.

Each case is an attack an approved tool call could make on `main` before the boundary: write, move,
delete or create into the journal, the patch store, the index, the write lock, the graph cache or
Prefect's results; through a symlink that leads there; with the state folder inside the UDM root or
inside an allowed directory; and through a patch. Every case asserts the refusal and that nothing in
the state folder changed.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from tasks.base import ToolContext, always_approve, call_tool
from tasks.filesystem import FileSystemAccessTool
from udm.config import Settings, load_settings
from udm.errors import ConfigError
from udm.patch import Patch, apply_patch

TOOL = FileSystemAccessTool()
# What the engine keeps in its state folder and trusts (relative to it).
ENGINE_FILES = (
    "journal/20260101T000000-deadbeef/journal.json",
    "patches/p-1.json",
    "index.duckdb",
    "locks/udm-write.lock",
    "graph/0123456789abcdef0123/graph.json",
    "prefect-results/abc123",
    "fetch-cache/urls/x.json",
)


def _snapshot(folder: Path) -> dict[str, tuple[str, bytes]]:
    snap: dict[str, tuple[str, bytes]] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            if p.is_symlink():
                snap[str(p)] = ("link", os.readlink(p).encode())
            elif p.is_dir():
                snap[str(p)] = ("dir", b"")
            else:
                snap[str(p)] = ("file", p.read_bytes())
    return snap


def _project(base: Path, **overrides: Any) -> Settings:
    (base / "docs" / "udm").mkdir(parents=True)
    (base / "docs" / "udm" / "index.md").write_text("# Index\n", encoding="utf-8")
    settings = load_settings(cwd=base, **overrides)
    for rel in ENGINE_FILES:
        path = settings.state_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("engine data\n", encoding="utf-8")
    return settings


class Call:
    """Calls the file tool over one project and remembers the state folder's contents."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.ctx = ToolContext(
            settings=settings.model_copy(update={"allow_delete": True}), approver=always_approve
        )
        self.before = _snapshot(settings.state_path)

    def __call__(self, **raw: Any) -> dict[str, Any]:
        """The tool's output for one call."""
        env = call_tool(TOOL, raw, self.ctx).envelope
        assert env.data is not None, env
        return env.data

    def refused(self, **raw: Any) -> str:
        """Assert the call was refused as a permission problem; returns the reason."""
        out = self(**raw)
        assert out["status"] == "ERROR_PERMISSION_DENIED", out
        return str(out["errorDetails"])

    def state_untouched(self) -> None:
        """Nothing in the state folder changed (no file, folder or link added, removed or edited)."""
        assert _snapshot(self.settings.state_path) == self.before


@pytest.fixture
def beside(tmp_path: Path) -> Iterator[Call]:
    """The default layout: state/ beside the manual, not inside any allowed directory."""
    call = Call(_project(tmp_path))
    yield call
    call.state_untouched()


@pytest.fixture(params=["inside-root", "inside-allowed-dir", "inside-scratch"])
def nested(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Call]:
    """The state folder inside the UDM root, inside an allowed directory, or inside scratch."""
    overrides: dict[str, Any] = {
        "inside-root": {"state_dir": "docs/udm/.udm-state"},
        "inside-allowed-dir": {"state_dir": "work/state", "allowed_dirs": [tmp_path / "work"]},
        "inside-scratch": {"state_dir": "scratch/state"},
    }[request.param]
    call = Call(_project(tmp_path, **overrides))
    yield call
    call.state_untouched()


def _rel(call: Call, path: Path) -> str:
    return os.path.relpath(path, call.settings.project_root)


@pytest.mark.parametrize("target", ENGINE_FILES)
def test_the_file_tool_cannot_write_engine_state(beside: Call, target: str) -> None:
    path = _rel(beside, beside.settings.state_path / target)
    beside.refused(action="writeFile", filePath=path, content="planted")
    beside.refused(action="writeFile", filePath=path + ".new", content="planted")
    beside.refused(action="readFile", filePath=path)
    beside.refused(action="checkExists", filePath=path)
    beside.refused(action="deleteFile", filePath=path)
    beside.refused(action="createDirectory", filePath=path + ".d/sub", recursive=True)
    (beside.settings.scratch_path / "bait.json").write_text("{}", encoding="utf-8")
    beside.refused(action="moveFile", filePath="scratch/bait.json", destinationPath=path + ".moved")
    beside.refused(action="moveFile", filePath=path, destinationPath="scratch/stolen")
    assert not (beside.settings.scratch_path / "stolen").exists()


def test_the_state_folder_itself_cannot_be_listed_moved_or_replaced(beside: Call) -> None:
    beside.refused(action="listFiles", filePath="state", recursive=True, maxDepth=5)
    beside.refused(action="moveFile", filePath="state", destinationPath="scratch/state-old")
    beside.refused(action="createDirectory", filePath="state/graph/new", recursive=True)
    assert not (beside.settings.state_path / "graph" / "new").exists()


@pytest.mark.parametrize("absolute", [True, False])
def test_a_symlink_into_state_is_refused_for_every_action(beside: Call, absolute: bool) -> None:
    scratch, state = beside.settings.scratch_path, beside.settings.state_path
    scratch.mkdir(exist_ok=True)
    (scratch / "st").symlink_to(state if absolute else Path("..") / "state")
    (scratch / "lock").symlink_to(state / "locks" / "udm-write.lock")
    for path in ("scratch/st/journal/x/journal.json", "scratch/st/index.duckdb", "scratch/lock"):
        reason = beside.refused(action="writeFile", filePath=path, content="planted")
        assert "state" in reason
        beside.refused(action="readFile", filePath=path)
    beside.refused(action="createDirectory", filePath="scratch/st/graph/x", recursive=True)
    beside.refused(action="moveFile", filePath="scratch/st/patches/p-1.json", destinationPath="scratch/p")
    # A listing of scratch shows neither the links' targets nor anything under them.
    out = beside(action="listFiles", filePath="scratch", recursive=True, maxDepth=4)
    assert out["status"] == "SUCCESS" and out["directoryContents"] == []
    assert any("st: symlink not followed" in w for w in out["warnings"]), out["warnings"]
    # Deleting the link itself is fine: the link is scratch's, what it points to stays.
    assert beside(action="deleteFile", filePath="scratch/lock")["status"] == "SUCCESS"
    assert (state / "locks" / "udm-write.lock").exists()


@pytest.mark.parametrize("target", ENGINE_FILES)
def test_a_state_folder_inside_an_allowed_directory_stays_out_of_bounds(nested: Call, target: str) -> None:
    path = _rel(nested, nested.settings.state_path / target)
    assert "state" in nested.refused(action="writeFile", filePath=path, content="planted")
    nested.refused(action="readFile", filePath=path)
    nested.refused(action="deleteFile", filePath=path)
    nested.refused(action="createDirectory", filePath=_rel(nested, nested.settings.state_path / "new"))


def test_a_nested_state_folder_is_hidden_from_listings_and_cannot_be_swapped(nested: Call) -> None:
    state = nested.settings.state_path
    parent = _rel(nested, state.parent)
    out = nested(action="listFiles", filePath=parent, recursive=True, maxDepth=8, includeHidden=True)
    assert out["status"] == "SUCCESS", out
    assert not any(state.name in e["name"].split("/") for e in out["directoryContents"]), out
    assert any("engine's own state, not listed" in w for w in out["warnings"]), out["warnings"]
    # Moving the state folder away, or moving a look-alike into its place, is refused.
    nested.refused(action="moveFile", filePath=_rel(nested, state), destinationPath=parent + "/old-state")
    fake = state.parent / "fake"
    fake.mkdir()
    nested.refused(action="moveFile", filePath=_rel(nested, fake), destinationPath=_rel(nested, state))
    fake.rmdir()


def test_the_browser_cannot_open_or_save_into_a_nested_state_folder(nested: Call) -> None:
    from tasks.browser.browser_tools import _sandbox_write, download_target
    from tasks.browser.session import ActionError, normalize_url

    state = nested.settings.state_path
    with pytest.raises(ActionError) as opened:
        normalize_url((state / "index.duckdb").as_uri(), nested.settings)
    assert opened.value.status == "ERROR_PATH_NOT_ALLOWED" and "engine's own state" in opened.value.message
    with pytest.raises(ActionError) as saved:
        _sandbox_write(
            nested.settings, download_target(nested.settings, str(state / "graph") + "/", "x.json"), b"{}"
        )
    assert saved.value.status == "ERROR_PATH_NOT_ALLOWED"
    # Outside the state folder, in the same allowed directory, a file: URL is fine.
    sibling = state.parent / "page.html"
    sibling.write_text("<p>hi</p>", encoding="utf-8")
    assert normalize_url(sibling.as_uri(), nested.settings) == sibling.as_uri()
    sibling.unlink()


def test_an_ancestor_of_the_state_folder_cannot_be_moved(tmp_path: Path) -> None:
    call = Call(_project(tmp_path, state_dir="docs/udm/cache/state"))
    reason = call.refused(action="moveFile", filePath="docs/udm/cache", destinationPath="docs/udm/cache2")
    assert "holds 'docs/udm/cache/state', a folder of the engine's own state" in reason
    # A look-alike tree moved in where the state folder's parent would be is refused the same way.
    (tmp_path / "docs" / "udm" / "other").mkdir()
    call.refused(action="moveFile", filePath="docs/udm/other", destinationPath="docs/udm/cache/state")
    call.state_untouched()


def test_a_patch_cannot_touch_a_state_folder_inside_the_root(tmp_path: Path) -> None:
    settings = _project(tmp_path, state_dir="docs/udm/.udm-state")
    # Only what a patch could reach: the engine's own recovery may tidy its journal meanwhile.
    watched = [p for p in ENGINE_FILES if not p.startswith("journal/")]
    before = {p: (settings.state_path / p).read_bytes() for p in watched}
    for op in (
        {"op": "create_file", "file": ".udm-state/graph/0123456789abcdef0123/graph.pickle", "content": "x"},
        {"op": "delete_file", "file": ".udm-state/index.duckdb"},
        {"op": "rename_file", "file": "index.md", "to": ".udm-state/patches/index.md"},
    ):
        patch = Patch.model_validate({"id": "evil", "operations": [op]})
        result = apply_patch(patch, settings)
        assert not result.committed, result
        assert "state" in (result.error or ""), result
    assert {p: (settings.state_path / p).read_bytes() for p in watched} == before
    assert not (settings.state_path / "graph" / "0123456789abcdef0123" / "graph.pickle").exists()
    assert not (settings.state_path / "patches" / "index.md").exists()
    assert (settings.udm_root / "index.md").exists()


def test_scratch_inside_state_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"scratch_dir .* inside the state folder"):
        load_settings(cwd=tmp_path, scratch_dir="state/scratch")
    with pytest.raises(ConfigError, match="scratch_dir"):
        load_settings(cwd=tmp_path, scratch_dir="state")


def test_the_scratch_folder_works_for_every_action(beside: Call) -> None:
    scratch = beside.settings.scratch_path
    assert not scratch.exists()  # made on first use
    out = beside(action="writeFile", filePath="scratch/notes/a.txt", content="one")
    assert out["status"] == "ERROR_PATH_NOT_FOUND", out  # parents are made by createDirectory
    assert beside(action="createDirectory", filePath="scratch/notes", recursive=True)["status"] == "SUCCESS"
    assert beside(action="writeFile", filePath="scratch/notes/a.txt", content="one")["status"] == "SUCCESS"
    data = base64.b64encode(b"\x00\x01binary").decode()
    assert beside(action="writeFile", filePath="scratch/b.bin", content=data, encoding="base64")["created"]
    assert beside(action="readFile", filePath="scratch/notes/a.txt")["fileContent"] == "one"
    moved = beside(action="moveFile", filePath="scratch/notes/a.txt", destinationPath="scratch/a.txt")
    assert moved["status"] == "SUCCESS"
    names = [
        e["name"]
        for e in beside(action="listFiles", filePath="scratch", recursive=True, maxDepth=3)[
            "directoryContents"
        ]
    ]
    assert names == ["a.txt", "b.bin", "notes"]
    assert beside(action="deleteFile", filePath="scratch/b.bin")["status"] == "SUCCESS"
    assert (scratch / "a.txt").read_text(encoding="utf-8") == "one" and not (scratch / "b.bin").exists()


def test_settings_report_the_boundary(tmp_path: Path) -> None:
    s = load_settings(cwd=tmp_path)
    data = s.public_dict()
    assert data["scratch_path"] == str(tmp_path.resolve() / "scratch")
    assert str(s.state_path) in data["protected_paths"]
    assert str(s.state_path) not in data["allowed_roots"]


_PARTS = st.sampled_from(["state", "scratch", "docs", "udm", "..", ".", "st", "journal", "graph", "x.json"])


@pytest.fixture(scope="module", params=["beside", "inside-root"])
def shared(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Call:
    """One project per layout for the property test, with symlinks from scratch and the root into state."""
    base = tmp_path_factory.mktemp("boundary")
    nested = request.param == "inside-root"
    settings = _project(base, **({"state_dir": "docs/udm/state"} if nested else {}))
    settings.scratch_path.mkdir()
    (settings.scratch_path / "st").symlink_to(settings.state_path)
    if not nested:
        (settings.udm_root / "st").symlink_to(Path("..") / ".." / "state")
    return Call(settings)


@hsettings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    parts=st.lists(_PARTS, min_size=1, max_size=6),
    dest=st.lists(_PARTS, min_size=1, max_size=6),
    action=st.sampled_from(["writeFile", "createDirectory", "moveFile", "deleteFile"]),
)
def test_no_path_spelling_changes_the_state_folder(
    shared: Call, parts: list[str], dest: list[str], action: str
) -> None:
    raw: dict[str, Any] = {"action": action, "filePath": "/".join(parts)}
    if action == "writeFile":
        raw["content"] = "planted"
    if action == "createDirectory":
        raw["recursive"] = True
    if action == "moveFile":
        raw["destinationPath"] = "/".join(dest)
    shared(**raw)
    shared.state_untouched()


def test_prefect_home_and_its_results_are_protected_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Persisted Prefect results name classes to import when read: a planted one is the same attack
    # as a planted pickle, so Prefect's home is out of bounds even inside an allowed directory.
    home = tmp_path / "work" / ".prefect"
    (home / "storage").mkdir(parents=True)
    monkeypatch.setenv("PREFECT_HOME", str(home))
    call = Call(_project(tmp_path, allowed_dirs=[tmp_path / "work"]))
    reason = call.refused(action="writeFile", filePath="work/.prefect/storage/result-key", content="{}")
    assert ".prefect" in reason
    call.refused(action="readFile", filePath="work/.prefect/profiles.toml")
    assert call(action="writeFile", filePath="work/notes.txt", content="fine")["status"] == "SUCCESS"
    assert not (home / "storage" / "result-key").exists()
