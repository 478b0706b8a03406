"""fileSystemAccessTool under attack: one test per attack class, every action, canaries outside.

Each test runs every action of the tool against the hostile path and checks three things: the
statuses, that the canaries' secret never appears in any result nor in any byte the process read,
and (in the `world` fixture's teardown, and here explicitly) that nothing outside changed.
"""

from __future__ import annotations

import base64
import json
import os
import stat
import threading
import time
from typing import Any

import pytest

from udm.guard import sandbox as sb

DENIED = "ERROR_PERMISSION_DENIED"
INVALID = "ERROR_INVALID_PATH"
ALL_ACTIONS = (
    "readFile",
    "readFile-base64",
    "writeFile",
    "listFiles",
    "listDirectories",
    "createDirectory",
    "checkExists",
    "deleteFile",
    "moveFile-from",
    "moveFile-to",
)


def attempt_all(world: Any, spy: list[bytes], path: str, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """Run every action against `path`; returns action -> status, asserting the secret never leaked."""
    ctx = world.ctx(allow_delete=True)
    bait = world.project / "scratch" / "bait.md"
    bait.write_text("bait", encoding="utf-8")
    calls: dict[str, dict[str, Any]] = {
        "readFile": {"action": "readFile", "filePath": path},
        "readFile-base64": {"action": "readFile", "filePath": path, "encoding": "base64"},
        "writeFile": {"action": "writeFile", "filePath": path, "content": "pwned", "backup": True},
        "listFiles": {"action": "listFiles", "filePath": path, "recursive": True, "maxDepth": 4},
        "listDirectories": {"action": "listDirectories", "filePath": path, "includeHidden": True},
        "createDirectory": {"action": "createDirectory", "filePath": path, "recursive": True},
        "checkExists": {"action": "checkExists", "filePath": path},
        "deleteFile": {"action": "deleteFile", "filePath": path},
        "moveFile-from": {"action": "moveFile", "filePath": path, "destinationPath": "scratch/stolen.md"},
        "moveFile-to": {"action": "moveFile", "filePath": "scratch/bait.md", "destinationPath": path},
    }
    statuses: dict[str, str] = {}
    b64_secret = base64.b64encode(world.secret)[:16].decode()
    for name, raw in calls.items():
        if name in skip:
            continue
        env = world.call(ctx, **raw)
        text = json.dumps(env)
        assert "TOP-SECRET" not in text and b64_secret not in text, (name, env)
        statuses[name] = env["data"]["status"] if env["data"] else f"invalid input: {env['error']}"
    assert not any(b"TOP-SECRET" in chunk for chunk in spy), "a canary's bytes were read from disk"
    assert not (world.project / "scratch" / "stolen.md").exists()
    return statuses


def assert_outside_untouched(world: Any, before: dict[str, Any]) -> None:
    """The guarded directories are byte-, name- and mtime-identical to the snapshot."""
    assert world.snapshot() == before


def test_dotdot_traversal(world: Any, read_spy: list[bytes]) -> None:
    before = world.snapshot()
    for path in (
        "../outside/canary.txt",
        "docs/udm/../../../outside/canary.txt",
        "scratch/../../outside",
        "scratch/./../../outside/sub/canary.txt",
        "../" * 40 + "etc/passwd",
    ):
        statuses = attempt_all(world, read_spy, path)
        assert set(statuses.values()) == {DENIED}, (path, statuses)
    assert_outside_untouched(world, before)


def test_absolute_path_outside(world: Any, read_spy: list[bytes]) -> None:
    before = world.snapshot()
    for path in (str(world.outside / "canary.txt"), str(world.outside), "/etc/passwd", "/", "//etc//passwd"):
        statuses = attempt_all(world, read_spy, path)
        assert set(statuses.values()) == {DENIED}, (path, statuses)
    assert_outside_untouched(world, before)


def test_sibling_prefix_bypass(world: Any, read_spy: list[bytes]) -> None:
    """CVE-2025-53110: '/p/allowed_evil' passed a startswith('/p/allowed') check."""
    before = world.snapshot()
    for path in (
        str(world.project / "allowed_evil" / "canary.txt"),
        "allowed_evil/canary.txt",
        "scratch_evil/canary.txt",
        str(world.project / "scratch_evil"),
        "scratch/../scratch_evil/canary.txt",
    ):
        statuses = attempt_all(world, read_spy, path)
        assert set(statuses.values()) == {DENIED}, (path, statuses)
    assert_outside_untouched(world, before)


def test_symlink_at_the_target_pointing_outside(world: Any, read_spy: list[bytes]) -> None:
    """CVE-2025-53109: a link inside an allowed dir pointing at a file outside it."""
    before = world.snapshot()
    link = world.project / "scratch" / "evil.md"
    link.symlink_to(world.outside / "canary.txt")
    (world.project / "logs" / "passwd").symlink_to("/etc/passwd")
    for path in ("scratch/evil.md", "logs/passwd"):
        statuses = attempt_all(world, read_spy, path, skip=("deleteFile", "moveFile-from", "moveFile-to"))
        assert set(statuses.values()) == {DENIED}, (path, statuses)
    # Delete and move act on the link itself, which is inside: the canary it names is untouched.
    ctx = world.ctx(allow_delete=True)
    assert world.call(ctx, action="moveFile", filePath="scratch/evil.md", destinationPath="scratch/e2.md")[
        "success"
    ]
    assert world.call(ctx, action="deleteFile", filePath="scratch/e2.md")["success"]
    assert not os.path.lexists(link) and not os.path.lexists(world.project / "scratch/e2.md")
    assert_outside_untouched(world, before)


def test_symlinked_directory_in_the_path(world: Any, read_spy: list[bytes]) -> None:
    before = world.snapshot()
    (world.project / "scratch" / "out").symlink_to(world.outside)
    (world.project / "docs" / "udm" / "abs-out").symlink_to(str(world.outside))
    for path in (
        "scratch/out/canary.txt",
        "scratch/out/sub/canary.txt",
        "scratch/out/new.md",
        "docs/udm/abs-out/x",
    ):
        statuses = attempt_all(world, read_spy, path)
        assert set(statuses.values()) == {DENIED}, (path, statuses)
    for path in ("scratch/out", "docs/udm/abs-out"):
        statuses = attempt_all(world, read_spy, path, skip=("deleteFile", "moveFile-from", "moveFile-to"))
        assert set(statuses.values()) == {DENIED}, (path, statuses)
    assert_outside_untouched(world, before)


def test_symlink_chain_resolving_outside(world: Any, read_spy: list[bytes]) -> None:
    before = world.snapshot()
    scratch, logs = world.project / "scratch", world.project / "logs"
    (logs / "hop3").symlink_to(world.outside)  # the only hop that leaves
    (scratch / "hop2").symlink_to("../logs/hop3")
    (world.project / "prompts" / "hop1").symlink_to(scratch / "hop2")
    statuses = attempt_all(world, read_spy, "prompts/hop1/canary.txt")
    assert set(statuses.values()) == {DENIED}, statuses
    # The same chain ending inside is followed.
    (logs / "hop3").unlink()
    (logs / "hop3").symlink_to(world.project / "docs" / "udm")
    data = world.call(action="readFile", filePath="prompts/hop1/00-index.md")["data"]
    assert data["status"] == "SUCCESS" and data["filePathTargeted"] == str(
        world.project / "docs/udm/00-index.md"
    )
    assert_outside_untouched(world, before)


def test_symlink_swapped_in_between_check_and_write(
    world: Any, read_spy: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    before = world.snapshot()
    sub = world.project / "scratch" / "sub"
    sub.mkdir()
    (sub / "canary.txt").write_text("inside", encoding="utf-8")

    def swap(stage: str) -> None:
        if sub.is_symlink():
            return
        sub.rename(sub.with_name("sub_aside"))
        sub.symlink_to(world.outside)

    ctx = world.ctx(allow_delete=True)
    for stage, raw in (
        (
            "write:before-commit",
            {"action": "writeFile", "filePath": "scratch/sub/canary.txt", "content": "pwned"},
        ),
        ("write:before-temp", {"action": "writeFile", "filePath": "scratch/sub/new.txt", "content": "pwned"}),
        ("delete:before-unlink", {"action": "deleteFile", "filePath": "scratch/sub/canary.txt"}),
        (
            "move:before-rename",
            {"action": "moveFile", "filePath": "scratch/sub/canary.txt", "destinationPath": "scratch/x"},
        ),
        ("mkdir:before-create", {"action": "createDirectory", "filePath": "scratch/sub/newdir"}),
        ("read:before-open", {"action": "readFile", "filePath": "scratch/sub/canary.txt"}),
    ):
        monkeypatch.setattr(sb, "_race_hook", lambda at, stage=stage: at == stage and swap(at))
        env = world.call(ctx, **raw)
        status = env["data"]["status"]
        expected = "ERROR_READ_FAILED" if raw["action"] == "readFile" else "ERROR_WRITE_FAILED"
        assert status == expected, (stage, env)
        assert (
            "during the operation" in env["data"]["errorDetails"] or "changed" in env["data"]["errorDetails"]
        )
        # Undo the swap for the next round.
        sub.unlink()
        sub.with_name("sub_aside").rename(sub)
    assert (sub / "canary.txt").read_text(encoding="utf-8") == "inside"
    assert sorted(os.listdir(sub)) == ["canary.txt"]
    assert not any(b"TOP-SECRET" in chunk for chunk in read_spy)
    assert_outside_untouched(world, before)


def test_symlink_swapping_race_through_the_tool(world: Any) -> None:
    before = world.snapshot()
    sub, aside = world.project / "scratch" / "sub", world.project / "scratch" / "sub_real"
    sub.mkdir()
    stop = threading.Event()

    def flipper() -> None:
        while not stop.is_set():
            sub.rename(aside)
            sub.symlink_to(world.outside)
            sub.unlink()
            aside.rename(sub)
            time.sleep(0.0005)

    thread = threading.Thread(target=flipper, daemon=True)
    thread.start()
    seen: dict[str, int] = {}
    deadline = time.monotonic() + 0.4
    i = 0
    try:
        while time.monotonic() < deadline:
            i += 1
            env = world.call(action="writeFile", filePath=f"scratch/sub/f{i}.md", content="x")
            status = env["data"]["status"]
            seen[status] = seen.get(status, 0) + 1
    finally:
        stop.set()
        thread.join(5)
    assert set(seen) <= {"SUCCESS", DENIED, "ERROR_PATH_NOT_FOUND", "ERROR_WRITE_FAILED", INVALID}, seen
    assert len([n for n in os.listdir(sub) if n.startswith("f")]) == seen.get("SUCCESS", 0)
    assert_outside_untouched(world, before)


def test_nul_bytes(world: Any, read_spy: list[bytes]) -> None:
    before = world.snapshot()
    for path in ("scratch/a\x00.md", "\x00", "docs/udm/00-index.md\x00../../outside/canary.txt"):
        statuses = attempt_all(world, read_spy, path)
        assert set(statuses.values()) == {INVALID}, (path, statuses)
    assert_outside_untouched(world, before)


def test_over_long_paths(world: Any, read_spy: list[bytes]) -> None:
    before = world.snapshot()
    for path in ("scratch/" + "n" * 256, "scratch/" + "日" * 86, "scratch/" + "/".join(["d" * 250] * 17)):
        statuses = attempt_all(world, read_spy, path)
        assert set(statuses.values()) == {INVALID}, (path[:20], statuses)
    assert_outside_untouched(world, before)


def test_fifo_and_device_files(world: Any, read_spy: list[bytes]) -> None:
    before = world.snapshot()
    os.mkfifo(world.project / "scratch" / "pipe")
    paths = ["scratch/pipe"]
    try:
        os.mknod(world.project / "scratch" / "zero", stat.S_IFCHR | 0o600, os.makedev(1, 5))
        paths.append("scratch/zero")
    except PermissionError:
        pass  # without CAP_MKNOD only the FIFO is tested; the device case is covered as root
    started = time.monotonic()
    for path in paths:
        statuses = attempt_all(world, read_spy, path)
        # moveFile-to refuses because the destination exists; every other action refuses the type.
        assert statuses.pop("moveFile-to") == "ERROR_WRITE_FAILED"
        assert set(statuses.values()) == {INVALID}, (path, statuses)
    assert time.monotonic() - started < 5, "a FIFO or device made a call block"
    listing = world.call(action="listFiles", filePath="scratch")["data"]
    assert "pipe: a FIFO, not listed" in listing["warnings"]
    assert "pipe" not in [e["name"] for e in listing["directoryContents"]]
    assert_outside_untouched(world, before)


def test_non_utf8_names(world: Any, read_spy: list[bytes]) -> None:
    before = world.snapshot()
    with open(os.path.join(os.fsencode(world.project / "scratch"), b"caf\xe9.md"), "wb") as fh:
        fh.write(b"x")
    surrogate = "scratch/caf\udce9.md"  # the name as os.fsdecode() spells it
    statuses = attempt_all(world, read_spy, surrogate)
    # Refused before any file-system call, as invalid input naming the field.
    for action, status in statuses.items():
        field = "destinationPath" if action == "moveFile-to" else "filePath"
        assert status.startswith(f"invalid input: invalid input: field '{field}'"), (action, status)
        assert "not valid UTF-8" in status and "caf\\\\xe9.md" in status, status
    # Callers of the engine that bypass the tool's input model get InvalidPathError (sandbox tests).
    listing = world.call(action="listFiles", filePath="scratch")["data"]
    assert listing["status"] == "SUCCESS"
    assert listing["warnings"] == ["caf\\xe9.md: the name is not valid UTF-8"]
    assert all(e["name"].isprintable() for e in listing["directoryContents"])
    json.dumps(listing, ensure_ascii=False).encode("utf-8")  # the result itself is valid UTF-8
    assert_outside_untouched(world, before)
