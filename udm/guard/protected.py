"""What stays out of bounds inside the allowed roots: the engine's state and settings, and git folders.

Protected folders (`protected=`, the engine's state: see `udm.guard.tool_sandbox`) lie inside the
roots but are out of bounds: every operation refuses a path that resolves into one (its real path,
after every symlink hop, is inside or equal to it), a listing skips them, and `move`/`delete` also
refuse a path that holds one (renaming or unlinking an ancestor would let a look-alike take its
place). A walk that would create folders first resolves the path without creating anything, so no
folder is made inside a protected one either. A `.git` folder or file below a root is refused the
same way: git runs what a repository's configuration names.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path

from udm.errors import PathProtectedError
from udm.guard.paths import HeldWalk, PathGuard, PathMissing, _normalize, _split, escape_name

__all__ = ["ProtectedGuard", "in_git_folder"]


def in_git_folder(real: str | Path, roots: Iterable[str | Path]) -> bool:
    """Whether the real path `real` lies in or names a `.git` below the allowed root it is in (any case)."""
    parts = _split(os.fspath(real))
    for root in roots:
        form = _split(os.path.realpath(os.fspath(root)))
        if parts[: len(form)] == form:
            return any(p.casefold() == ".git" for p in parts[len(form) :])
    return False


# Protected files rather than folders (`Settings.protected_paths`): named as settings in a refusal.
_SETTINGS_FILES = frozenset({"udm.toml", "pyproject.toml", "prefect.yaml"})


class ProtectedGuard(PathGuard):
    """A path guard that also refuses the protected paths and git folders inside its roots."""

    def __init__(
        self,
        roots: Iterable[Path | str],
        project_root: Path | str | None = None,
        *,
        protected: Iterable[Path | str] = (),
    ) -> None:
        super().__init__(roots, project_root)
        forms: list[tuple[tuple[str, ...], str]] = []
        for p in protected:
            absolute = _normalize(os.path.join(self.project_root, os.fspath(p)))
            # Both spellings: the real path is what a walk reports; the configured one is what the
            # engine opens, so an ancestor of it that is a symlink must not be replaceable either.
            for form in dict.fromkeys((_split(absolute), _split(os.path.realpath(absolute)))):
                forms.append((form, absolute))
        self._protected = tuple(forms)

    def _protected_by(self, real: str, *, holding: bool = False) -> str | None:
        """The protected folder `real` lies in (or, with `holding`, also one that lies in `real`)."""
        parts = _split(real)
        for form, shown in self._protected:
            if parts[: len(form)] == form or (holding and form[: len(parts)] == parts):
                return shown
        return None

    def _refuse_protected(self, real: str, original: str | Path, *, holding: bool = False) -> None:
        shown = self._protected_by(real, holding=holding)
        if shown is not None:
            what = "lies in" if self._protected_by(real) else "holds"
            raise PathProtectedError(
                f"{escape_name(os.fspath(original))!r} {what} {self.display(shown)!r}, "
                + (
                    "a file of the engine's settings"
                    if os.path.basename(shown) in _SETTINGS_FILES
                    else "a folder of the engine's own state"
                )
                + ", which the tools may neither read nor write (use the scratch folder for scratch files)"
            )

    def _refuse_git(self, real: str, original: str | Path) -> None:
        # git runs what a repository's config names (core.fsmonitor, hooks, filters) whenever the
        # engine commits a patch, and finds the repository by the first `.git` above the manual: a
        # `.git` a tool could write or plant below a root would be code execution at the next commit.
        parts = _split(real)
        for root in self._roots:
            for form in root.forms:
                if parts[: len(form)] == form:
                    if any(p.casefold() == ".git" for p in parts[len(form) :]):
                        raise PathProtectedError(
                            f"{escape_name(os.fspath(original))!r} lies in or names a git folder "
                            "('.git'), whose configuration and hooks git runs as code: the tools may "
                            "neither read nor write it"
                        )
                    return

    def _refuse(self, real: str, original: str | Path) -> None:
        self._refuse_git(real, original)
        self._refuse_protected(real, original)

    def _walk(
        self, path: str | Path, *, follow_final: bool, create_dirs: bool = False, follow_links: bool = True
    ) -> HeldWalk:
        if create_dirs:
            # Where the path leads, found without creating anything: no folder is made inside state
            # or a git folder.
            with suppress(PathMissing):
                self._walk(path, follow_final=follow_final, follow_links=follow_links).close()
        try:
            w = super()._walk(
                path, follow_final=follow_final, create_dirs=create_dirs, follow_links=follow_links
            )
        except PathMissing as exc:
            self._refuse(os.path.join(exc.existing, *exc.missing), path)
            raise
        try:
            self._refuse(w.path, path)
        except BaseException:
            w.close()
            raise
        return w
