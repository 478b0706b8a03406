"""udm.guard.sandbox: the path guard and its safe primitives, attack class by attack class."""

from __future__ import annotations

import errno
import os
import stat
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from udm.errors import InvalidPathError, PathChangedError, PathOutsideError
from udm.guard import MAX_NAME_BYTES, Sandbox, resolve_inside
from udm.guard import sandbox as sb
from udm.guard.sandbox import atomic_write, safe_delete, safe_list, safe_mkdir, safe_move, safe_read_bytes


@pytest.fixture
def box(world: Any) -> Sandbox:
    """The engine sandbox of the world."""
    return world.sandbox


SECRET = b"TOP-SECRET-CANARY-7f3a\n"  # the world fixture's canary content


def _secret_read(seen: list[bytes]) -> bool:
    return any(SECRET.strip() in chunk for chunk in seen)


# -- resolution -----------------------------------------------------------------------------------


def test_relative_and_absolute_paths_resolve_inside(world: Any, box: Sandbox) -> None:
    udm = world.project / "docs" / "udm"
    assert box.resolve("docs/udm/00-index.md") == udm / "00-index.md"
    assert box.resolve(str(udm / "00-index.md")) == udm / "00-index.md"
    assert box.resolve("docs/udm/./appendices/../01-intro.md") == udm / "01-intro.md"
    assert box.resolve("scratch/not/yet/there.md") == world.project / "scratch/not/yet/there.md"
    with pytest.raises(FileNotFoundError):
        box.resolve("scratch/missing.md", must_exist=True)
    assert box.resolve("scratch") == world.project / "scratch"


def test_dotdot_traversal_is_refused(world: Any, box: Sandbox, read_spy: list[bytes]) -> None:
    for path in (
        "../outside/canary.txt",
        "docs/udm/../../../outside/canary.txt",
        "scratch/../../outside/canary.txt",
    ):
        with pytest.raises(PathOutsideError, match="outside the allowed directories"):
            box.read(path)
        with pytest.raises(PathOutsideError):
            box.write(path, b"pwned")
    # '..' that stays inside is fine: docs/udm/.. is docs, not allowed; scratch/../logs is.
    assert box.resolve("scratch/../logs/x.jsonl") == world.project / "logs" / "x.jsonl"
    with pytest.raises(PathOutsideError):
        box.resolve("docs/udm/..")
    assert not _secret_read(read_spy)


def test_absolute_paths_outside_are_refused(world: Any, box: Sandbox) -> None:
    for path in ("/etc/passwd", str(world.outside / "canary.txt"), "/", "//etc/passwd", str(world.project)):
        with pytest.raises(PathOutsideError):
            box.read(path)
    with pytest.raises(PathOutsideError):
        box.write(str(world.outside / "new.txt"), b"x")
    assert not (world.outside / "new.txt").exists()


def test_sibling_prefix_is_not_inside(world: Any, box: Sandbox) -> None:
    # CVE-2025-53110: '/allowed_evil'.startswith('/allowed') is True; components are compared instead.
    evil = world.project / "allowed_evil" / "canary.txt"
    assert str(evil).startswith(str(world.project / "allowed"))
    for path in (
        str(evil),
        "allowed_evil/canary.txt",
        "scratch_evil/canary.txt",
        "scratch/../scratch_evil/canary.txt",
    ):
        with pytest.raises(PathOutsideError):
            box.read(path)
        with pytest.raises(PathOutsideError):
            box.write(path, b"pwned")
    assert not box.contains(evil)
    assert box.contains(world.project / "allowed" / "x")


def test_final_symlink_to_outside_is_refused(world: Any, box: Sandbox, read_spy: list[bytes]) -> None:
    link = world.project / "scratch" / "evil.md"
    link.symlink_to(world.outside / "canary.txt")
    with pytest.raises(PathOutsideError, match="symlink"):
        box.read("scratch/evil.md")
    with pytest.raises(PathOutsideError):
        box.write("scratch/evil.md", b"pwned")
    with pytest.raises(PathOutsideError):
        box.info("scratch/evil.md")
    assert os.readlink(link) == str(world.outside / "canary.txt")
    assert not _secret_read(read_spy)


def test_symlinked_directory_to_outside_is_refused(world: Any, box: Sandbox) -> None:
    (world.project / "scratch" / "out").symlink_to(world.outside)
    for op in (
        lambda: box.read("scratch/out/canary.txt"),
        lambda: box.write("scratch/out/new.txt", b"x"),
        lambda: box.write("scratch/out/canary.txt", b"x"),
        lambda: box.mkdir("scratch/out/newdir"),
        lambda: box.mkdir("scratch/out/a/b", parents=True),
        lambda: box.list("scratch/out"),
        lambda: box.delete("scratch/out/canary.txt"),
        lambda: box.move("scratch/out/canary.txt", "scratch/stolen.txt"),
        lambda: box.move("docs/udm/00-index.md", "scratch/out/exfil.md"),
    ):
        with pytest.raises(PathOutsideError):
            op()
    assert (world.project / "docs/udm/00-index.md").exists()


def test_symlink_chain_escaping_at_the_last_hop_is_refused(world: Any, box: Sandbox) -> None:
    scratch = world.project / "scratch"
    (scratch / "l3").symlink_to("../../outside/canary.txt")
    (world.project / "logs" / "l2").symlink_to(scratch / "l3")
    (scratch / "l1").symlink_to("../logs/l2")
    with pytest.raises(PathOutsideError, match="scratch/l3"):
        box.read("scratch/l1")
    with pytest.raises(PathOutsideError):
        box.write("scratch/l1", b"pwned")


def test_symlinks_staying_inside_are_followed_hop_by_hop(world: Any, box: Sandbox) -> None:
    scratch = world.project / "scratch"
    (scratch / "docs").symlink_to("../docs/udm")  # relative, inside
    (scratch / "abs").symlink_to(world.project / "docs" / "udm" / "01-intro.md")  # absolute, inside
    (world.project / "logs" / "hop").symlink_to(scratch / "docs")  # a chain, every hop inside
    assert box.read("scratch/docs/00-index.md").data.startswith(b"# Index")
    assert box.read("scratch/abs").path == world.project / "docs/udm/01-intro.md"
    assert box.read("logs/hop/01-intro.md").data.startswith(b"line 1")
    info = box.info("logs/hop")
    assert info is not None and info.kind == "directory" and info.symlink
    # A write through an inside link updates the file it points to; the link stays a link.
    box.write("scratch/abs", b"new\n")
    assert (scratch / "abs").is_symlink()
    assert (world.project / "docs/udm/01-intro.md").read_bytes() == b"new\n"


def test_symlink_loop_is_an_invalid_path(world: Any, box: Sandbox) -> None:
    scratch = world.project / "scratch"
    (scratch / "a").symlink_to("b")
    (scratch / "b").symlink_to("a")
    with pytest.raises(InvalidPathError, match="symlink loop"):
        box.read("scratch/a")


def test_nul_bytes_are_invalid(box: Sandbox) -> None:
    for path in ("scratch/x\x00.md", "\x00", "scratch\x00/../../etc/passwd"):
        with pytest.raises(InvalidPathError, match="NUL"):
            box.resolve(path)


def test_over_long_paths_are_invalid(world: Any, box: Sandbox) -> None:
    with pytest.raises(InvalidPathError, match="256-byte component"):
        box.write("scratch/" + "a" * 256, b"x")
    # Bytes, not characters: 128 two-byte characters are 256 bytes.
    with pytest.raises(InvalidPathError, match="256-byte component"):
        box.write("scratch/" + "é" * 128, b"x")
    # A long component removed again by '..' still counts: the kernel would refuse it too.
    with pytest.raises(InvalidPathError):
        box.resolve("scratch/" + "a" * 300 + "/../x")
    with pytest.raises(InvalidPathError, match="bytes long"):
        box.resolve("scratch/" + "/".join(["d" * 200] * 25))
    # The limit itself is fine.
    ok = box.write("scratch/" + "b" * MAX_NAME_BYTES, b"x")
    assert ok.path.name == "b" * MAX_NAME_BYTES


def test_non_utf8_names(world: Any, box: Sandbox) -> None:
    scratch = os.fsencode(world.project / "scratch")
    with open(os.path.join(scratch, b"bad\xff.md"), "wb") as fh:
        fh.write(b"x")
    (world.project / "scratch" / "good.md").write_text("ok", encoding="utf-8")
    listing = box.list("scratch")
    assert [e.name for e in listing.entries] == ["good.md"]
    assert listing.skipped == ["bad\\xff.md: the name is not valid UTF-8"]
    surrogate = os.fsdecode(os.path.join(scratch, b"bad\xff.md"))
    with pytest.raises(InvalidPathError, match="not valid UTF-8"):
        box.read(surrogate)
    os.symlink(b"bad\xff.md", os.path.join(scratch, b"link"))
    with pytest.raises(InvalidPathError, match="not valid UTF-8"):
        box.read("scratch/link")


def test_fifo_is_refused_without_hanging(world: Any, box: Sandbox) -> None:
    fifo = world.project / "scratch" / "pipe"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(InvalidPathError, match="FIFO"):
        box.read("scratch/pipe")
    with pytest.raises(InvalidPathError, match="FIFO"):
        box.write("scratch/pipe", b"x")
    with pytest.raises(InvalidPathError):
        box.delete("scratch/pipe")
    assert time.monotonic() - started < 2
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert box.list("scratch").skipped == ["pipe: a FIFO, not listed"]


def test_device_file_is_refused(world: Any, box: Sandbox) -> None:
    dev = world.project / "scratch" / "null"
    try:
        os.mknod(dev, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs CAP_MKNOD")
    with pytest.raises(InvalidPathError, match="character device"):
        box.read("scratch/null")
    with pytest.raises(InvalidPathError, match="character device"):
        box.write("scratch/null", b"x")
    with pytest.raises(InvalidPathError):
        box.info("scratch/null")
    # A symlink to a device outside is refused before the type is even looked at.
    (world.project / "scratch" / "zero").symlink_to("/dev/zero")
    with pytest.raises(PathOutsideError):
        box.read("scratch/zero")


# -- check-then-use races -------------------------------------------------------------------------


def _swap_dir_for_link(directory: Path, target: Path) -> Path:
    aside = directory.with_name(directory.name + "_aside")
    directory.rename(aside)
    directory.symlink_to(target)
    return aside


@pytest.mark.parametrize("stage", ["write:before-temp", "write:before-commit"])
def test_directory_swapped_for_symlink_before_write(
    world: Any, box: Sandbox, monkeypatch: pytest.MonkeyPatch, stage: str
) -> None:
    sub = world.project / "scratch" / "sub"
    sub.mkdir()
    (sub / "canary.txt").write_text("inside\n", encoding="utf-8")
    swapped: list[Path] = []

    def hook(at: str) -> None:
        if at == stage and not swapped:
            swapped.append(_swap_dir_for_link(sub, world.outside))
            # A naive open(path, 'w') right now would land outside: the swap is real.
            assert os.path.realpath(sub / "canary.txt") == str(world.outside / "canary.txt")

    monkeypatch.setattr(sb, "_race_hook", hook)
    with pytest.raises(PathChangedError):
        box.write("scratch/sub/canary.txt", b"pwned\n")
    assert swapped
    aside = swapped[0]
    assert (aside / "canary.txt").read_text(encoding="utf-8") == "inside\n"
    assert sorted(os.listdir(aside)) == ["canary.txt"], "a temp file was left behind"


def test_target_swapped_for_symlink_before_commit_replaces_the_link(
    world: Any, box: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = world.project / "scratch" / "note.md"
    target.write_text("old\n", encoding="utf-8")

    def hook(at: str) -> None:
        if at == "write:before-commit":
            target.unlink()
            target.symlink_to(world.outside / "canary.txt")

    monkeypatch.setattr(sb, "_race_hook", hook)
    box.write("scratch/note.md", b"new\n")
    # rename(2) replaced the link itself; the file it pointed to was never opened.
    assert not target.is_symlink()
    assert target.read_bytes() == b"new\n"


def test_file_swapped_before_read_is_not_read(
    world: Any, box: Sandbox, monkeypatch: pytest.MonkeyPatch, read_spy: list[bytes]
) -> None:
    target = world.project / "scratch" / "note.md"
    target.write_text("inside\n", encoding="utf-8")

    def hook(at: str) -> None:
        if at == "read:before-open":
            target.unlink()
            target.symlink_to(world.outside / "canary.txt")

    monkeypatch.setattr(sb, "_race_hook", hook)
    with pytest.raises(PathChangedError):
        box.read("scratch/note.md")
    assert not _secret_read(read_spy)


def test_file_swapped_for_fifo_before_read_does_not_hang(
    world: Any, box: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = world.project / "scratch" / "note.md"
    target.write_text("inside\n", encoding="utf-8")

    def hook(at: str) -> None:
        if at == "read:before-open":
            target.unlink()
            os.mkfifo(target)

    monkeypatch.setattr(sb, "_race_hook", hook)
    with pytest.raises(InvalidPathError, match="FIFO"):
        box.read("scratch/note.md")


def test_directory_swapped_before_delete_deletes_nothing_outside(
    world: Any, box: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    sub = world.project / "scratch" / "sub"
    sub.mkdir()
    (sub / "canary.txt").write_text("inside\n", encoding="utf-8")
    monkeypatch.setattr(
        sb, "_race_hook", lambda at: at == "delete:before-unlink" and _swap_dir_for_link(sub, world.outside)
    )
    with pytest.raises(PathChangedError):
        box.delete("scratch/sub/canary.txt")
    assert (world.outside / "canary.txt").read_bytes() == SECRET


def test_directory_swapped_before_move_moves_nothing_outside(
    world: Any, box: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    sub = world.project / "scratch" / "sub"
    sub.mkdir()
    (sub / "canary.txt").write_text("inside\n", encoding="utf-8")
    monkeypatch.setattr(
        sb, "_race_hook", lambda at: at == "move:before-rename" and _swap_dir_for_link(sub, world.outside)
    )
    with pytest.raises(PathChangedError):
        box.move("scratch/sub/canary.txt", "scratch/taken.txt")
    assert not (world.project / "scratch" / "taken.txt").exists()


def test_racing_symlink_swaps_never_let_a_write_out(world: Any, box: Sandbox) -> None:
    """A thread flips scratch/sub between a real directory and a symlink to outside while writes run."""
    sub = world.project / "scratch" / "sub"
    aside = world.project / "scratch" / "sub_real"
    sub.mkdir()
    stop = threading.Event()
    flips = [0]

    def flipper() -> None:
        while not stop.is_set():
            sub.rename(aside)
            sub.symlink_to(world.outside)
            time.sleep(0)
            sub.unlink()
            aside.rename(sub)
            flips[0] += 1
            time.sleep(0.0005)  # let some writes find the real directory

    thread = threading.Thread(target=flipper, daemon=True)
    thread.start()
    outcomes: dict[str, int] = {}
    deadline = time.monotonic() + 0.8
    i = 0
    try:
        while time.monotonic() < deadline:
            i += 1
            try:
                box.write(f"scratch/sub/f{i}.txt", b"data\n")
                key = "written"
            except (PathOutsideError, PathChangedError, FileNotFoundError, NotADirectoryError) as exc:
                key = type(exc).__name__
            outcomes[key] = outcomes.get(key, 0) + 1
    finally:
        stop.set()
        thread.join(5)
    assert flips[0] > 10 and i > 10, (flips, outcomes)
    assert outcomes.get("written", 0) > 0, outcomes
    assert len(outcomes) > 1, f"the race never bit: {outcomes}"
    assert sorted(os.listdir(world.outside)) == ["canary.txt", "sub"]
    landed = [n for n in os.listdir(sub) if n.startswith("f")]
    assert len(landed) == outcomes["written"]
    assert not [n for n in os.listdir(sub) if n.endswith(".tmp")]


# -- the primitives -------------------------------------------------------------------------------


def test_atomic_write_creates_replaces_keeps_mode_and_backup(world: Any, box: Sandbox) -> None:
    target = world.project / "scratch" / "doc.md"
    first = box.write("scratch/doc.md", b"one\n")
    assert first.created and first.bytes_written == 4 and first.backup_path is None
    target.chmod(0o600)
    second = box.write("scratch/doc.md", b"two\n", backup=True)
    assert not second.created
    assert target.read_bytes() == b"two\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert second.backup_path == world.project / "scratch" / "doc.md.bak"
    assert second.backup_path.read_bytes() == b"one\n"
    assert sorted(os.listdir(world.project / "scratch")) == ["doc.md", "doc.md.bak"]
    with pytest.raises(FileNotFoundError):
        box.write("scratch/missing-dir/doc.md", b"x")
    with pytest.raises(IsADirectoryError):
        box.write("scratch", b"x")
    with pytest.raises(IsADirectoryError):
        box.write("docs/udm/appendices", b"x")


def test_failed_write_leaves_the_old_file_and_no_temp(
    world: Any, box: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = world.project / "scratch" / "doc.md"
    target.write_bytes(b"old\n")
    real_write = os.write

    def full_disk(fd: int, data: Any) -> int:
        if len(data) > 0 and bytes(data[:3]) == b"new":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", full_disk)
    with pytest.raises(OSError) as info:
        box.write("scratch/doc.md", b"new content\n")
    assert info.value.errno == errno.ENOSPC
    assert target.read_bytes() == b"old\n"
    assert os.listdir(target.parent) == ["doc.md"]


def test_read_limits_and_line_ranges(box: Sandbox) -> None:
    assert box.read("docs/udm/01-intro.md", max_bytes=6).data == b"line 1"
    cut = box.read("docs/udm/01-intro.md", max_bytes=6)
    assert cut.truncated and cut.size == 35
    whole = box.read("docs/udm/01-intro.md", max_bytes=35)
    assert not whole.truncated and whole.data.endswith(b"line 5\n")
    assert box.read("docs/udm/01-intro.md", start_line=2, end_line=3).data == b"line 2\nline 3\n"
    assert box.read("docs/udm/01-intro.md", start_line=5).data == b"line 5\n"
    assert box.read("docs/udm/01-intro.md", end_line=1).data == b"line 1\n"
    assert box.read("docs/udm/01-intro.md", start_line=9).data == b""
    lim = box.read("docs/udm/01-intro.md", start_line=2, end_line=4, max_bytes=10)
    assert lim.data == b"line 2\nlin" and lim.truncated
    with pytest.raises(IsADirectoryError):
        box.read("docs/udm")
    with pytest.raises(FileNotFoundError):
        box.read("docs/udm/nope.md")
    with pytest.raises(FileNotFoundError):
        box.read("docs/udm/nope/deeper.md")
    with pytest.raises(NotADirectoryError):
        box.read("docs/udm/00-index.md/deeper.md")


def test_mkdir(world: Any, box: Sandbox) -> None:
    assert box.mkdir("scratch/a") == (world.project / "scratch/a", True)
    assert box.mkdir("scratch/a") == (world.project / "scratch/a", False)
    with pytest.raises(FileNotFoundError):
        box.mkdir("scratch/x/y/z")
    assert box.mkdir("scratch/x/y/z", parents=True) == (world.project / "scratch/x/y/z", True)
    with pytest.raises(FileExistsError, match="not a directory"):
        box.mkdir("docs/udm/00-index.md")
    # A missing allowed root is created on request (prompts is configured but may not exist yet).
    (world.project / "prompts").rmdir()
    with pytest.raises(FileNotFoundError):
        box.mkdir("prompts/modes")
    assert box.mkdir("prompts/modes", parents=True)[1]


def test_move_and_delete(world: Any, box: Sandbox) -> None:
    scratch = world.project / "scratch"
    (scratch / "a.md").write_text("a", encoding="utf-8")
    (scratch / "dir").mkdir()
    (scratch / "dir" / "inner.md").write_text("i", encoding="utf-8")
    assert box.move("scratch/a.md", "logs/a.md") == (scratch / "a.md", world.project / "logs/a.md")
    assert (world.project / "logs/a.md").read_text(encoding="utf-8") == "a" and not (
        scratch / "a.md"
    ).exists()
    box.move("scratch/dir", "scratch/dir2")
    assert (scratch / "dir2" / "inner.md").exists()
    with pytest.raises(FileExistsError):
        box.move("logs/a.md", "docs/udm/00-index.md")
    with pytest.raises(FileNotFoundError):
        box.move("scratch/missing.md", "scratch/b.md")
    with pytest.raises(OSError) as into_itself:
        box.move("scratch/dir2", "scratch/dir2/sub")
    assert into_itself.value.errno == errno.EINVAL
    with pytest.raises(InvalidPathError):
        box.move("scratch", "logs/scratch")
    # A symlink is moved and deleted as a link, even one pointing outside.
    (scratch / "out").symlink_to(world.outside / "canary.txt")
    box.move("scratch/out", "scratch/out2")
    assert os.readlink(scratch / "out2") == str(world.outside / "canary.txt")
    assert box.delete("scratch/out2") == scratch / "out2"
    assert not os.path.lexists(scratch / "out2")
    box.delete("logs/a.md")
    with pytest.raises(FileNotFoundError):
        box.delete("logs/a.md")
    with pytest.raises(IsADirectoryError):
        box.delete("scratch/dir2")
    with pytest.raises(InvalidPathError):
        box.delete("scratch")


def test_listing(world: Any, box: Sandbox) -> None:
    udm = world.project / "docs" / "udm"
    (udm / "appendices" / "deep").mkdir()
    (udm / "appendices" / "deep" / "x.md").write_text("x", encoding="utf-8")
    (udm / "linked").symlink_to("appendices")
    (udm / "escape").symlink_to(world.outside)
    flat = box.list("docs/udm")
    assert [(e.name, e.kind) for e in flat.entries] == [
        ("00-index.md", "file"),
        ("01-intro.md", "file"),
        ("appendices", "directory"),
        ("linked", "directory"),
    ]
    assert flat.entries[3].symlink and flat.entries[0].size == len(b"# Index\n\nSee [intro](01-intro.md).\n")
    assert flat.entries[2].size is None and flat.entries[0].mtime > 0
    assert len(flat.skipped) == 1 and flat.skipped[0].startswith("escape: symlink not followed")
    hidden = box.list("docs/udm", include_hidden=True)
    assert ".hidden.md" in [e.name for e in hidden.entries]
    deep = box.list("docs/udm", recursive=True, max_depth=3, pattern="*.md")
    assert [e.name for e in deep.entries] == [
        "00-index.md",
        "01-intro.md",
        "appendices/APP-X-RESEARCH-V1.md",
        "appendices/deep/x.md",
    ]
    assert [e.name for e in box.list("docs/udm", recursive=True, max_depth=2, pattern="*.md").entries][
        -1
    ] == ("appendices/APP-X-RESEARCH-V1.md")
    dirs = box.list("docs/udm", recursive=True, max_depth=5, only_dirs=True)
    assert [e.name for e in dirs.entries] == ["appendices", "appendices/deep", "linked"]
    assert box.list("docs/udm", pattern="appendices/*", recursive=True, max_depth=2).entries[0].name == (
        "appendices/APP-X-RESEARCH-V1.md"
    )
    capped = box.list("docs/udm", limit=2)
    assert capped.truncated and len(capped.entries) == 2
    with pytest.raises(NotADirectoryError):
        box.list("docs/udm/00-index.md")
    with pytest.raises(FileNotFoundError):
        box.list("docs/udm/nope")


def test_root_that_is_a_symlink_is_trusted_in_both_spellings(world: Any) -> None:
    real = world.project / "real-manual"
    real.mkdir()
    (real / "a.md").write_text("a", encoding="utf-8")
    (world.project / "manual").symlink_to(real)
    box = Sandbox([world.project / "manual"], world.project)
    assert box.read("manual/a.md").data == b"a"
    assert box.read(real / "a.md").data == b"a"
    assert box.write("manual/b.md", b"b").path == real / "b.md"
    (real / "b.md").unlink()
    with pytest.raises(PathOutsideError):
        box.read("manual/../scratch/x")


def test_function_api(world: Any) -> None:
    roots = world.settings.allowed_roots()
    project = world.project
    assert resolve_inside("scratch/x", roots, project) == project / "scratch/x"
    with pytest.raises(PathOutsideError):
        resolve_inside("../outside/canary.txt", roots, project)
    atomic_write("scratch/f.md", b"hello", roots, project_root=project)
    assert safe_read_bytes("scratch/f.md", roots, 4, project_root=project) == b"hell"
    assert safe_mkdir("scratch/d", roots, project_root=project) == project / "scratch/d"
    assert (
        safe_move("scratch/f.md", "scratch/d/f.md", roots, project_root=project) == project / "scratch/d/f.md"
    )
    assert [
        e.name for e in safe_list("scratch", roots, recursive=True, max_depth=2, project_root=project).entries
    ] == [
        "d",
        "d/f.md",
    ]
    assert safe_delete("scratch/d/f.md", roots, project_root=project) == project / "scratch/d/f.md"
    with pytest.raises(InvalidPathError):
        Sandbox([], project)
