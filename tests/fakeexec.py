"""A fake executor for tests/unit (installed by tests/unit/conftest.py): no process is
started there. Commands that a unit test means to run are answered from captured real
outputs (tests/data/<tool>/<version>/<case>.{stdout,stderr,exitcode}, the way the
captures are laid out, tests/data/README.md); any other command fails the test with what
to do. Tests that need real tools live in tests/system."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from support import DATA
from volbench.system.proc import Completed, command_line

Writer = Callable[[tuple[str, ...], Path | None], None]


class NoProcessInUnitTests(AssertionError):
    pass


@dataclass(frozen=True)
class Capture:
    """Replay `case` (a path under tests/data without its extension) for any command whose
    program is `program` and whose arguments include every one of `args`; `writes` makes
    the files the tool would have written (fio's --output)."""

    program: str
    case: str
    args: tuple[str, ...] = ()
    writes: Writer | None = None

    def matches(self, argv: tuple[str, ...]) -> bool:
        return Path(argv[0]).name == self.program and all(a in argv[1:] for a in self.args)

    def completed(self, argv: tuple[str, ...], cwd: Path | None) -> Completed:
        base = DATA / self.case

        def read(ext: str, default: str = "") -> str:
            path = base.with_name(base.name + ext)
            return path.read_text() if path.exists() else default

        if self.writes is not None:
            self.writes(argv, cwd)
        now = time.time()
        return Completed(argv, int(read(".exitcode", "0").strip() or 0), read(".stdout"),
                         read(".stderr"), now, now, 0.0, 0.0)


@dataclass(frozen=True)
class Answer:
    """A literal answer for a program the test itself made up (a stand-in script found on
    a PATH it built): for commands that are no real tool's, so have no capture."""

    program: str
    stdout: str
    args: tuple[str, ...] = ()

    def matches(self, argv: tuple[str, ...]) -> bool:
        return Path(argv[0]).name == self.program and all(a in argv[1:] for a in self.args)

    def completed(self, argv: tuple[str, ...], cwd: Path | None) -> Completed:
        now = time.time()
        return Completed(argv, 0, self.stdout, "", now, now, 0.0, 0.0)


@dataclass
class Replay:
    """The executor: the first matching capture answers; `calls` records every command."""

    captures: list[Capture | Answer] = field(default_factory=list)
    calls: list[tuple[str, ...]] = field(default_factory=list)

    def add(self, *captures: Capture | Answer) -> Replay:
        self.captures.extend(captures)
        return self

    def run(self, argv: tuple[str, ...], cwd: Path | None, input: str | None) -> Completed:
        self.calls.append(argv)
        if "/" in argv[0] and not Path(argv[0]).exists():  # as Popen would
            raise FileNotFoundError(2, "No such file or directory", argv[0])
        for capture in self.captures:
            if capture.matches(argv):
                return capture.completed(argv, cwd)
        raise NoProcessInUnitTests(
            f"tests/unit starts no process, and no capture answers `{command_line(argv)}`: "
            "replay a capture from tests/data (tests/fakeexec.py, the `replay` fixture) or "
            "move the test to tests/system")

    def start(self, argv: tuple[str, ...], log: Path) -> NoReturn:
        raise NoProcessInUnitTests(f"tests/unit starts no server (`{command_line(argv)}`): "
                                   "servers are tested in tests/system")


def output_file(argv: Sequence[str], option: str) -> Path:
    """The FILE of `--option=FILE` in argv."""
    (value,) = [a.split("=", 1)[1] for a in argv if a.startswith(option + "=")]
    return Path(value)
