"""The one process-ending policy (procfs.escalate): SIGTERM, a grace period, SIGKILL, a
last wait; used by process groups, PID lists, cgroups and (as shell) remote hosts."""

from __future__ import annotations

import signal

from volbench.remote import session
from volbench.system import procfs


class Fake:
    """Processes that exit on the signal number in `dies_on` (never, if None)."""

    def __init__(self, dies_on: int | None, present: bool = True) -> None:
        self.dies_on, self.present, self.sent = dies_on, present, []

    def send(self, sig: int) -> bool:
        self.sent.append(sig)
        if sig == self.dies_on:
            self.present = False
        return True

    def alive(self) -> bool:
        return self.present


def test_a_process_that_honours_sigterm_gets_no_sigkill() -> None:
    fake = Fake(signal.SIGTERM)
    assert procfs.escalate(fake.send, fake.alive, grace=5.0)
    assert fake.sent == [signal.SIGTERM]


def test_one_that_ignores_sigterm_is_killed_after_the_grace() -> None:
    fake = Fake(signal.SIGKILL)
    assert procfs.escalate(fake.send, fake.alive, grace=0.1, kill_wait=1.0)
    assert fake.sent == [signal.SIGTERM, signal.SIGKILL]


def test_nothing_alive_means_nothing_sent() -> None:
    fake = Fake(None, present=False)
    assert procfs.escalate(fake.send, fake.alive)
    assert fake.sent == []


def test_a_survivor_is_reported_and_resend_signals_at_every_poll() -> None:
    fake = Fake(None)
    assert not procfs.escalate(fake.send, fake.alive, grace=0.2, kill_wait=0.2, resend=True)
    assert fake.sent.count(signal.SIGTERM) > 2 and fake.sent.count(signal.SIGKILL) > 2
    assert fake.sent.index(signal.SIGKILL) > fake.sent.index(signal.SIGTERM)


def test_the_remote_stop_script_follows_the_same_policy() -> None:
    signals = session._STOP_SIGNALS.split()
    assert signals.count("TERM") * session._SHELL_POLL == procfs.TERM_GRACE
    assert signals.count("KILL") * session._SHELL_POLL == procfs.KILL_WAIT
    assert f"for sig in {session._STOP_SIGNALS}; do" in session._STOP
