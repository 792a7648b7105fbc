"""Shared fixtures: every test gets its own journal directory and work directory,
waits politely for one of the machine's few loop devices, and root tests check
that they left no loop device, mount, cgroup or process behind.

Set VOLBENCH_TESTS_STRICT=1 (CI does) to turn "tool missing" and "not root"
skips into failures: a CI machine must run every test for real.

The host's load and steal are sampled for the whole session (tests/hostload.py): a failed
test's report says what they were while it ran (for a test that reads the shared lab boot,
during the guest's steps it reads), and the session ends with the figures of the whole run.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import hostload

# One PostgreSQL server for every store test of the session (tests/pgstore.py).
import schemacheck
from pgstore import pg_server, pg_url  # noqa: F401
from support import STRICT, folder_problem, leftovers
from volbench.config import fields
from volbench.system.block import devices


def pytest_configure(config: pytest.Config) -> None:
    hostload.start()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed test's report gains the host's load and steal while it ran."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.failed and hostload.RECORDER is not None:
        report.sections.append(("host load and steal", hostload.for_test(item, call)))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if hostload.RECORDER is not None:
        terminalreporter.write_line(hostload.session_line())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wrong = []
    for item in items:
        folder = Path(str(item.path)).parent.name
        markers = {m.name for m in item.iter_markers()}
        if (why := folder_problem(folder, markers)) is not None:
            wrong.append(f"{item.nodeid}: {why}")
        # The quick loop (scripts/test --quick) runs everything not marked slow in
        # seconds; a property test draws its examples for seconds: CI runs those.
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False) \
                and "slow" not in markers:
            wrong.append(f"{item.nodeid}: a property test (hypothesis) is slow: mark it "
                         "@pytest.mark.slow")
    if wrong:
        raise pytest.UsageError("tests in the wrong folder or without their marker:\n"
                                + "\n".join(wrong))
    for item in items:
        if item.get_closest_marker("root") and os.geteuid() != 0:
            if STRICT:
                item.add_marker(pytest.mark.xfail(reason="root required", strict=True))
            else:
                item.add_marker(pytest.mark.skip(reason="needs root"))


@pytest.fixture(autouse=True)
def _environment_kept() -> Iterator[None]:
    """No test leaves the process environment changed (monkeypatch restores its own
    changes before this runs): a leaked variable reaches every later test's volbench
    subprocesses. CI once lost all progress output to a leaked VOLBENCH_PROGRESS_EVENTS."""
    before = dict(os.environ)
    yield
    changed = sorted(k for k in set(before) | set(os.environ)
                     if before.get(k) != os.environ.get(k) and k != "PYTEST_CURRENT_TEST")
    assert not changed, f"the test left the process environment changed: {changed}"


@pytest.fixture(autouse=True)
def _isolated_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Journals of this test only, so `cleanup` in one test never touches another's."""
    monkeypatch.setenv("VOLBENCH_STATE_DIR", str(tmp_path / "state"))
    # Eight loop devices for the whole machine: wait for a free one instead of failing.
    monkeypatch.setenv(devices.LOOP_WAIT_ENV, "600")


@pytest.fixture(autouse=True)
def _declared_fields() -> Iterator[None]:
    """Every field validation reads is declared (config/spec.py): `volbench schema` is
    derived from the declarations, so an undeclared one is a field the schema lacks. And
    every bad value volbench refuses for its type, choice or bound, the schema refuses
    too (tests/schemacheck.py)."""
    fields.undeclared.clear()
    problems: list[schemacheck.Seen] = []

    def watch(reader: fields.Reader, key: str | int, message: str) -> None:
        if (found := schemacheck.seen(reader, key, message)) is not None:
            problems.append(found)

    fields.Reader.watch = watch
    try:
        yield
    finally:
        fields.Reader.watch = None
    found = list(dict.fromkeys(fields.undeclared))
    fields.undeclared.clear()
    assert not found, ("fields read without a declaration, so `volbench schema` does not "
                       f"know them: {found}; declare each beside the code that reads it")
    missed = list(dict.fromkeys(m for p in problems if (m := schemacheck.missed(p))))
    assert not missed, "the schema lets pass what volbench refuses:\n" + "\n".join(missed)


def _scratch(base: Path) -> Iterator[Path]:
    path = base / uuid.uuid4().hex[:12]
    path.mkdir(parents=True)
    yield path
    leaks = leftovers(path)
    shutil.rmtree(path, ignore_errors=True)
    assert not leaks, f"test left resources behind: {leaks}"


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A work directory outside pytest's private tmp (other users can reach it). Under
    scripts/test it is in RAM (scripts/in-ram: a tmpfs on /var/tmp/volbench-tests), so
    the host tests' loop disks stay off the disk the lab's images are read from."""
    yield from _scratch(Path("/var/tmp/volbench-tests"))


@pytest.fixture
def diskdir() -> Iterator[Path]:
    """A work directory on the host's disk, never in RAM: for tests whose ground truth is
    what the disk costs. On tmpfs an fsync is free (pgbench's commit with
    synchronous_commit on took as long as with it off: 54 against 58 us) and bonnie++'s
    64 MiB end too soon for it to give a rate ("+++++")."""
    yield from _scratch(Path("/var/tmp/volbench-disk-tests"))
