"""Property: whatever path an LLM makes up, the tool stays inside the allowed dirs or refuses."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SEGMENTS = [
    "..",
    ".",
    "",
    "docs",
    "udm",
    "scratch",
    "logs",
    "prompts",
    "allowed",
    "scratch_evil",
    "allowed_evil",
    "outside",
    "sub",
    "canary.txt",
    "00-index.md",
    "appendices",
    "in_link",
    "out_link",
    "dir_out",
    "chain",
    "loop",
    "etc",
    "passwd",
    ".hidden.md",
    "new.md",
    "\x00",
    "n" * 256,
    "é" * 130,
    "ünïcødé",
    "日本語",
    "*",
    "~",
]
# Where a generated path starts: hostile roots, and inside ones (some through symlinks) so that
# plenty of calls succeed and the "stays inside" half of the property is exercised too.
PREFIXES = [
    "",
    "/",
    "{project}/",
    "{base}/",
    "{outside}/",
    "{project}/scratch/",
    "scratch/",
    "scratch/",
    "docs/udm/",
    "docs/udm/",
    "logs/",
    "prompts/",
    "allowed/",
    "scratch/in_link/",
    "scratch/sub/",
    "logs/chain/",
    "prompts/etc/",
]

segment = st.one_of(
    st.sampled_from(SEGMENTS),
    st.sampled_from(SEGMENTS[:25]),  # the plain names again: fewer NULs and over-long names
    st.text(alphabet="ab.é日", min_size=1, max_size=6),
)
path_template = st.builds(
    lambda prefix, parts: prefix + "/".join(parts),
    st.sampled_from(PREFIXES),
    st.lists(segment, min_size=0, max_size=3),
)
call_shape = st.fixed_dictionaries(
    {
        "action": st.sampled_from(
            [
                "readFile",
                "writeFile",
                "listFiles",
                "listDirectories",
                "createDirectory",
                "deleteFile",
                "checkExists",
                "moveFile",
            ]
        ),
        "path": path_template,
        "destination": path_template,
        "recursive": st.booleans(),
        "maxDepth": st.integers(min_value=1, max_value=3),
    }
)

REFUSALS = {"ERROR_INVALID_PATH", "ERROR_PERMISSION_DENIED"}


def _fill(template: str, world: Any) -> str:
    return template.format(project=world.project, base=world.base, outside=world.outside)


def _add_links(world: Any) -> None:
    """The hostile and friendly links the paths can name; re-made if an earlier example moved one."""
    scratch = world.project / "scratch"
    links = {
        scratch / "out_link": world.outside / "canary.txt",
        scratch / "dir_out": world.outside,
        scratch / "in_link": Path("../docs/udm"),
        world.project / "logs" / "chain": Path("../scratch/dir_out"),
        scratch / "loop": Path("loop"),
        world.project / "prompts" / "etc": Path("/etc"),
    }
    for link, target in links.items():
        if not os.path.lexists(link):
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(target)
    if not (scratch / "sub" / "canary.txt").exists():
        (scratch / "sub").mkdir(exist_ok=True)
        (scratch / "sub" / "canary.txt").write_text("inside\n", encoding="utf-8")


def _inside(world: Any, path: str, follow_final: bool = True) -> bool:
    full = os.path.normpath(path if os.path.isabs(path) else os.path.join(world.project, path))
    # moveFile and deleteFile act on a final symlink itself, not on what it points to.
    real = (
        os.path.realpath(full)
        if follow_final
        else os.path.join(os.path.realpath(os.path.dirname(full)), os.path.basename(full))
    )
    parts = Path(real).parts
    for root in world.settings.allowed_roots():
        root_parts = Path(os.path.realpath(root)).parts
        if parts[: len(root_parts)] == root_parts:
            return True
    return False


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(shape=call_shape)
def test_any_path_stays_inside_or_is_refused(
    world: Any, read_spy: list[bytes], shape: dict[str, Any]
) -> None:
    # One world for all examples (a fresh one costs ~100 ms here): what earlier examples wrote
    # inside only makes later ones more varied; the outside must stay identical throughout.
    _add_links(world)
    before = world.snapshot()
    path = _fill(shape["path"], world)
    raw: dict[str, Any] = {"action": shape["action"], "filePath": path}
    if shape["action"] == "writeFile":
        raw["content"] = "pwned"
    if shape["action"] == "moveFile":
        raw["destinationPath"] = _fill(shape["destination"], world)
    if shape["action"] in ("createDirectory", "listFiles", "listDirectories"):
        raw["recursive"] = shape["recursive"]
        raw["maxDepth"] = shape["maxDepth"]
    read_spy.clear()
    env = world.call(world.ctx(allow_delete=True), **raw)

    # Nothing outside changed, and no byte of a canary was read or returned.
    assert world.snapshot() == before
    assert not any(b"TOP-SECRET" in chunk for chunk in read_spy)
    assert "TOP-SECRET" not in json.dumps(env)

    if env["data"] is None:
        # Only empty paths are rejected by the input model (min_length).
        assert path == "" or raw.get("destinationPath") == "", env
        return
    data = env["data"]
    status = data["status"]
    if status in REFUSALS:
        assert data["errorDetails"]
        return
    allowed = {"SUCCESS", "ERROR_PATH_NOT_FOUND"} | (
        {"ERROR_WRITE_FAILED"} if raw["action"] == "moveFile" else set()
    )
    assert status in allowed, (raw, data)
    # Anything not refused happened (or was looked for) inside an allowed directory.
    follow = raw["action"] not in ("moveFile", "deleteFile")
    assert _inside(world, data["filePathTargeted"], follow), (raw, data)
    if data.get("destinationPathTargeted"):
        assert _inside(world, data["destinationPathTargeted"], follow), (raw, data)


@pytest.mark.parametrize("template", ["{outside}/canary.txt", "scratch/out_link", "logs/chain/canary.txt"])
def test_property_oracle_sees_escapes(build_world: Any, template: str, tmp_path: Path) -> None:
    """The property's `_inside` oracle is not vacuous: these paths really do point outside."""
    world = build_world(tmp_path)
    _add_links(world)
    assert not _inside(world, _fill(template, world))
    assert _inside(world, "scratch/in_link/00-index.md")
