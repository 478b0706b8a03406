"""Where settings come from, read with the standard library only: options, `UDM_*` variables, config files.

`udm.config.Settings` reads its config files through `read_config_files`, and `flows/entry.py`'s fast
paths (which must answer before pydantic is imported) resolve the few settings they need through
`raw_setting` and `resolve_path`: one rule for both, so a fast answer and a full one see the same
manual.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False

if TYPE_CHECKING:  # runtime imports stay minimal: the CLI's fast paths import this module
    from collections.abc import Mapping
    from typing import Any

__all__ = [
    "CONFIG_FILES",
    "ENV_PREFIX",
    "SOURCE_DEFAULTS",
    "raw_setting",
    "read_config_files",
    "resolve_path",
    "setting_variables",
]

ENV_PREFIX = "UDM_"
# The files settings are read from, in the working directory, highest first.
CONFIG_FILES = ("udm.toml", "pyproject.toml")

# The defaults of the settings the fast paths read; `Settings` declares the same ones from here.
SOURCE_DEFAULTS: dict[str, str] = {
    "root": "docs/udm",
    "state_dir": "state",
    "logs_dir": "logs",
    "approval_policy": "smart_auto",
}


def _toml(path: str) -> dict[str, Any]:
    if not os.path.isfile(path):
        return {}
    import tomllib

    with open(path, "rb") as fh:
        try:
            return tomllib.load(fh)
        except RecursionError:
            # tomllib recurses into nested arrays and inline tables: a file's depth is its own to choose.
            raise tomllib.TOMLDecodeError(f"{os.path.basename(path)} is nested too deeply") from None
        except UnicodeDecodeError as exc:
            # TOML is UTF-8: a file saved in another encoding (Latin-1) is not TOML, said in one line.
            raise tomllib.TOMLDecodeError(
                f"{os.path.basename(path)} is not valid UTF-8 (byte {exc.start})"
            ) from None


def _table(data: dict[str, Any], *keys: str) -> dict[str, Any]:
    """`data[keys[0]][keys[1]]...`, {} where a key is missing; TOMLDecodeError where one is not a table."""
    for i, key in enumerate(keys):
        data = data.get(key, {})
        if not isinstance(data, dict):
            import tomllib

            name = ".".join(keys[: i + 1])
            raise tomllib.TOMLDecodeError(
                f"{CONFIG_FILES[1]}: `{name}` is a {type(data).__name__}, not a table"
            )
    return data


def read_config_files(cwd: str | os.PathLike[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """`udm.toml` and pyproject.toml's `[tool.udm]` in `cwd`, highest first ({} for a missing file).

    Raises OSError for an unreadable file and `tomllib.TOMLDecodeError` (a ValueError) for bad TOML
    (nested too deeply, or a `tool` or `tool.udm` that is not a table)."""
    udm_toml = _toml(os.path.join(cwd, CONFIG_FILES[0]))
    pyproject = _table(_toml(os.path.join(cwd, CONFIG_FILES[1])), "tool", "udm")
    return udm_toml, pyproject


def setting_variables(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment variables that may set a setting: `UDM_*` in any case, as `Settings` reads them."""
    env = os.environ if environ is None else environ
    return {name: value for name, value in env.items() if name.upper().startswith(ENV_PREFIX)}


def raw_setting(
    key: str,
    overrides: Mapping[str, Any],
    files: tuple[dict[str, Any], dict[str, Any]],
    environ: Mapping[str, str] | None = None,
) -> Any:
    """One setting's raw value, highest first: override, `UDM_<KEY>`, udm.toml, [tool.udm], default (names
    in any case)."""
    if key in overrides:
        return overrides[key]
    wanted = (ENV_PREFIX + key).lower()
    # Environment names match in any case (the last spelling wins), as pydantic-settings matches them.
    found = [v for n, v in (os.environ if environ is None else environ).items() if n.lower() == wanted]
    if found:
        return found[-1]
    for table in files:
        # Keys match in any case too, the first spelling in the file winning, as `Settings` matches
        # them: `ROOT = "x"` in udm.toml is its root, and the fast paths must read the same manual.
        for name, value in table.items():
            if name.lower() == key:
                return value
    return SOURCE_DEFAULTS.get(key)


def resolve_path(value: str | os.PathLike[str], project_root: str | os.PathLike[str]) -> str:
    """A configured path made absolute against the project root (`~` expanded, symlinks not followed)."""
    path = os.path.expanduser(os.fspath(value))
    return os.path.abspath(path if os.path.isabs(path) else os.path.join(project_root, path))
