"""A tool output of the wrong shape is a ParseError, whichever line of a parser finds it.

Parsers read nested JSON and CSV fields in many places (`float(side["bw"])`); a file
that is valid JSON but holds `null`, text or a list where a number belongs fails
there with a TypeError, KeyError or ValueError. Those are the file's fault, not a
bug, so they become a ParseError naming the source, which the runner keeps with
the failed run and the CLI prints as one line.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from volbench.core.errors import ParseError

P = ParamSpec("P")
R = TypeVar("R")

# What reading a field of an unexpected type or a missing field raises. OverflowError:
# float() of a 400-digit integer; RecursionError: JSON nested thousands deep.
SHAPE_ERRORS = (TypeError, KeyError, IndexError, ValueError, AttributeError, OverflowError,
                ZeroDivisionError, RecursionError)


def shape_message(exc: BaseException) -> str:
    """One line for a parser's unexpected exception: its type and the first 80 characters of its
    message."""
    text = str(exc)
    text = text if len(text) <= 80 else text[:80] + "…"
    return f"unexpected content ({type(exc).__name__}: {text})"


def shape_checked(tool: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a parser called as (text, source, …): shape errors become ParseErrors."""
    def decorate(parse: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(parse)
        def checked(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return parse(*args, **kwargs)
            except SHAPE_ERRORS as exc:
                source = args[1] if len(args) > 1 else kwargs.get("source", f"{tool} output")
                raise ParseError(tool, str(source), shape_message(exc)) from exc
        return checked
    return decorate
