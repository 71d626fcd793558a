"""Lazy re-exports for package ``__init__`` modules (PEP 562 module ``__getattr__``).

A package lists its public names with the module defining each; the name's module is imported on
first attribute access, so importing the package (and any of its sub-modules, which imports the
package first) costs nothing beyond this module. Used by ``folioflow`` and its sub-packages.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, namespace: dict[str, Any], exports: Mapping[str, str]) -> tuple[
        Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for the package named ``package`` whose module globals are
    ``namespace``: ``exports`` maps each public name to the module that defines it (absolute
    dotted names). The resolved object is cached in ``namespace``. ``__getattr__`` raises
    :class:`AttributeError` for names not in ``exports``."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__
