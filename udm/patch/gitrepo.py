"""Committed patches as git commits: find the manual's work tree, refuse dirty files, commit with trailers.

The git CLI through subprocess (argument lists, never a shell). The work tree is found by looking for
`.git` upwards from the manual's folder in Python first, so a manual outside any repository costs no
subprocess. Before a transaction, `check_clean` refuses (ConflictError) when a file the patch touches
has uncommitted changes in git, so a person's unsaved work is never folded into a reviewed commit or
overwritten. After it, `commit_patch` stages exactly the patch's files and commits only them (other
staged work stays staged), optionally on a branch of its own. No module here imports Prefect.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from udm.errors import ConflictError

__all__ = [
    "GitCommit",
    "GitRepo",
    "branch_name",
    "check_clean",
    "commit_message",
    "commit_patch",
    "find_repo",
]

# A git command that takes longer than this is stuck (a lock, a hook waiting for input).
_TIMEOUT_S = 60.0
# Used only when git has no identity configured, so a fresh machine still records the commit.
_FALLBACK_IDENTITY = ("-c", "user.name=UDM Pipelines", "-c", "user.email=udm-pipelines@localhost")


class GitCommit(BaseModel):
    """What happened in git after a committed patch."""

    commit: str | None = Field(default=None, description="The new commit's id, when one was made.")
    branch: str | None = Field(default=None, description="The branch it is on.")
    files: list[str] = Field(default_factory=list, description="Its files, relative to the repository.")
    error: str | None = Field(
        default=None, description="Why no commit was made (the files on disk are committed all the same)."
    )


@dataclass(frozen=True)
class GitRepo:
    """A git work tree holding the manual."""

    top: Path

    def run(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run `git -C top args...` (no shell); GitError-free: the caller reads returncode when check=False."""
        env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
        env["GIT_TERMINAL_PROMPT"] = "0"
        env.update(_explicit(self.top))
        done = subprocess.run(
            ["git", "-C", str(self.top), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            timeout=_TIMEOUT_S,
            check=False,
        )
        if check and done.returncode != 0:
            raise OSError(f"git {args[0]} failed: {(done.stderr or done.stdout).strip()}")
        return done

    def rel(self, path: Path) -> str:
        """`path` relative to the work tree, with '/' (ValueError when it lies outside)."""
        return Path(os.path.realpath(path)).relative_to(self.top).as_posix()


def _explicit(top: Path) -> dict[str, str]:
    """GIT_DIR and GIT_WORK_TREE naming the repository found by its `.git`: git discovers nothing itself.

    Left to discover, git also takes a folder holding HEAD, config, objects/ and refs/ for a (bare)
    repository, and runs what its config names (core.fsmonitor) on `git status`: four files a tool may
    write in the manual would be code execution at the next commit.
    """
    return {"GIT_DIR": str(top / ".git"), "GIT_WORK_TREE": str(top)}


def find_repo(folder: Path) -> GitRepo | None:
    """The git work tree holding `folder`, or None (no `.git` above it, or git unusable)."""
    here = Path(os.path.abspath(folder))
    for candidate in (here, *here.parents):
        if (candidate / ".git").exists():
            break
    else:
        return None
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
    env.update(_explicit(candidate))
    try:
        done = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            env=env,
            timeout=_TIMEOUT_S,
            check=False,
        )
    except OSError:  # no git on this machine: the manual is committed to disk only
        return None
    if done.returncode != 0 or not done.stdout.strip():
        return None
    return GitRepo(Path(os.path.realpath(done.stdout.strip())))


def not_ignored(repo: GitRepo, paths: list[Path]) -> list[Path]:
    """The paths git does not ignore (a manual in a git-ignored folder is not committed)."""
    try:
        rels = {repo.rel(p): p for p in paths}
    except ValueError:
        return list(paths)  # check_clean names the path outside the work tree
    done = repo.run("check-ignore", "-z", "--stdin", stdin="\0".join(rels) + "\0", check=False)
    if done.returncode not in (0, 1):
        raise OSError(f"git check-ignore failed: {done.stderr.strip()}")
    ignored = {r for r in done.stdout.split("\0") if r}
    return [p for r, p in rels.items() if r not in ignored]


def _status(repo: GitRepo, rels: list[str]) -> list[tuple[str, str]]:
    """(XY code, path) of every uncommitted change among `rels` (untracked files included)."""
    done = repo.run("status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *rels)
    out: list[tuple[str, str]] = []
    parts = done.stdout.split("\0")
    i = 0
    while i < len(parts):
        entry = parts[i]
        i += 1
        if len(entry) < 4:
            continue
        code, path = entry[:2], entry[3:]
        if code[0] in "RC":  # a rename's source follows as its own field
            i += 1
        out.append((code, path))
    return out


def check_clean(repo: GitRepo, paths: list[Path]) -> None:
    """ConflictError naming every file among `paths` with uncommitted changes in git."""
    try:
        rels = [repo.rel(p) for p in paths]
    except ValueError as exc:
        raise ConflictError(
            f"a file the patch touches lies outside the git work tree {repo.top}: {exc}"
        ) from exc
    if not rels:
        return
    dirty = _status(repo, rels)
    if dirty:
        shown = ", ".join(f"{path} ({code.strip() or '?'})" for code, path in dirty[:10])
        more = f" and {len(dirty) - 10} more" if len(dirty) > 10 else ""
        raise ConflictError(
            f"uncommitted changes in the git work tree {repo.top} to files the patch touches: {shown}{more}; "
            "commit or stash them first (nothing was changed)"
        )


def branch_name(patch_id: str, prefix: str = "udm/patch-") -> str:
    """A valid branch name for a patch id (git refuses '..', a leading '-' or '.', '.lock' endings...)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", patch_id).strip(".-") or "patch"
    slug = slug.replace("..", ".")
    if slug.endswith(".lock"):
        slug = slug[: -len(".lock")] + "-lock"
    return prefix + slug


def commit_message(record: dict[str, Any]) -> str:
    """Subject and body from the patch's description; trailers Patch-Id, Reviewed-by, Flow-Run."""
    text = (record.get("description") or "").replace("\0", "").strip()
    if record.get("kind") == "revert":
        text = f"Revert patch {record.get('reverts')}"
    lines = text.splitlines() or [f"udm patch {record.get('id')}"]
    subject, body = lines[0].strip() or f"udm patch {record.get('id')}", "\n".join(lines[1:]).strip()
    # A trailer value is one line; a reviewer's name with a newline would forge another trailer.
    trailers = [f"Patch-Id: {record.get('id')}"]
    if record.get("kind") == "revert":
        trailers.append(f"Reverts: {record.get('reverts')}")
    review = record.get("review") or {}
    if review.get("decision") == "approved" and review.get("reviewer"):
        trailers.append(f"Reviewed-by: {' '.join(str(review['reviewer']).split())}")
    if review.get("flow_run_url") or review.get("flow_run_id"):
        trailers.append(f"Flow-Run: {review.get('flow_run_url') or review.get('flow_run_id')}")
    return subject + "\n\n" + (body + "\n\n" if body else "") + "\n".join(trailers) + "\n"


def commit_patch(
    repo: GitRepo, paths: list[Path], record: dict[str, Any], *, branch: str | None
) -> GitCommit:
    """Stage exactly `paths` and commit only them (on a new `branch`, checked out, when given)."""
    rels: list[str] = []
    try:
        rels = [repo.rel(p) for p in paths]
        if branch is not None:
            # From the current commit, keeping the patch's changes in the work tree: no file is touched.
            repo.run("switch", "-c", branch)
        repo.run("add", "-A", "--", *rels)
        identity: tuple[str, ...] = ()
        if not repo.run("config", "user.email", check=False).stdout.strip():
            identity = _FALLBACK_IDENTITY
        # `--only` with the paths: whatever else a person had staged stays staged, out of this commit.
        repo.run(*identity, "commit", "--only", "-F", "-", "--", *rels, stdin=commit_message(record))
        sha = repo.run("rev-parse", "HEAD").stdout.strip()
        head = repo.run("symbolic-ref", "--short", "-q", "HEAD", check=False).stdout.strip() or None
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        return GitCommit(files=rels, branch=branch, error=str(exc))
    return GitCommit(commit=sha, branch=head, files=rels)
