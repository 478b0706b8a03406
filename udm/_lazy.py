"""Lazy package surfaces: a package names its public names, each imported from its module on first use."""

from __future__ import annotations

import importlib

__all__ = ["load_surface_name"]


def load_surface_name(package: str, surface: dict[str, str], name: str) -> object:
    """The value of `name` from the package module that defines it, or AttributeError as Python expects."""
    module = surface.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{package}.{module}"), name)
    # Cache on the package so the next access is a plain attribute lookup.
    setattr(importlib.import_module(package), name, value)
    return value
