"""A registry of kinds whose modules are imported the first time a kind is asked for.

`volbench --version` must not pay for importing eleven target layouts and seven workload
tools, and `volbench plan FILE` only needs the kinds its file names. A registry lists
each kind's name with the module and attribute that define it; looking a name up
(`KINDS["fio"]`) imports that module once, while `name in KINDS`, `len(KINDS)` and
iterating over the names import nothing. `values()` and `items()` import every module:
they are for the commands that list all kinds (`volbench fields`, `volbench schema`).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class LazyKinds(Mapping[str, T], Generic[T]):
    """name -> kind, from {name: "package.module:ATTRIBUTE"}; each kind's `name` attribute
    must be the name it is registered under (checked when it is loaded)."""

    def __init__(self, where: Mapping[str, str]) -> None:
        self._where = dict(where)
        self._loaded: dict[str, T] = {}

    def __getitem__(self, name: str) -> T:
        try:
            return self._loaded[name]
        except KeyError:
            pass
        module, _, attribute = self._where[name].partition(":")  # KeyError: not a kind
        kind: Any = getattr(importlib.import_module(module), attribute)
        if getattr(kind, "name", name) != name:
            raise RuntimeError(f"{module}:{attribute} is registered as {name!r} but is "
                               f"named {kind.name!r}")
        self._loaded[name] = kind
        return kind  # type: ignore[no-any-return]

    def __contains__(self, name: object) -> bool:
        return name in self._where

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)

    def module(self, name: str) -> str:
        """The module that defines kind `name` (not imported)."""
        return self._where[name].partition(":")[0]
