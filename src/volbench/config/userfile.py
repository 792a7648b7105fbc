"""Reading a file the user names (an experiment, a fio job file or one it includes, a
pgbench script, an output to import): only a regular file, only up to a stated size,
both checked before a byte is read.

`/dev/zero` as a script was read whole into memory (MemoryError, or the OOM killer); a
FIFO with no writer blocks an ordinary open for ever. So the file is opened without
blocking (O_NONBLOCK: a FIFO opens at once), its type and size are taken from the open
descriptor (what is checked is what is read, even if the path is swapped in between),
and at most the limit is read.

A file the experiment names (a fio job file, a file it includes, a pgbench script) is
also refused when its mode does not let every user read it. volbench runs as root, so it
could read any file; an experiment naming /etc/shadow as its script (or a link to it)
had its first line stored in the run's stderr, from pgbench's syntax error. The files an
experiment needs are the user's own texts (0644 under the usual umask); a private one
(/etc/shadow, a key, 0600/0640) is what no experiment should copy into its results. So is
a file of a kernel file system (/proc, /sys, …): /proc/self/cmdline is world-readable
but, read by volbench, is volbench's own command line (a `--db` password included) copied
into the run directory; /proc/self/maps its memory map. The experiment file and an
import, named on the command line by whoever runs volbench, are not held to this.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from volbench.core.errors import VolbenchError

KiB, MiB = 1024, 1024**2
# The limits, per kind of file (docs/safety.md, "Files volbench reads").
LIMITS = {"experiment file": 10 * MiB, "fio job file": 1 * MiB,
          "pgbench script": 1 * MiB, "file to import": 256 * MiB}
# Kinds an experiment names (rather than the command line): others must be able to read them.
NAMED_BY_EXPERIMENT = frozenset({"fio job file", "pgbench script"})


class UserFileError(VolbenchError):
    """A file the user named is not a regular file, is too large, or cannot be read."""


def kind_of(mode: int) -> str:
    """What a file that is not a regular file is, in a few words."""
    for test, what in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return what
    return "not a regular file"


def read_bytes(path: Path, what: str, limit: int | None = None) -> bytes:
    """The file's bytes, or UserFileError naming the problem and the fix."""
    limit = LIMITS[what] if limit is None else limit
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UserFileError(f"cannot read the {what} {path}: {exc.strerror}; check the "
                            "path") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):  # (a directory cannot even be wrapped in a file)
        os.close(fd)
        raise UserFileError(f"the {what} {path} is {kind_of(st.st_mode)}, not a "
                            f"regular file; give the path of a {what}")
    kernel = _kernel_filesystem(st.st_dev) if what in NAMED_BY_EXPERIMENT else None
    if kernel is not None:
        os.close(fd)
        raise UserFileError(f"the {what} {path} is on {kernel}, a kernel file system "
                            "(the state of processes and devices; as root, volbench's own "
                            f"command line and memory map), not a file; give a {what}")
    if what in NAMED_BY_EXPERIMENT and not st.st_mode & stat.S_IROTH:
        os.close(fd)
        real = os.path.realpath(path)
        shown = f"{path}" if real == os.path.abspath(path) else f"{path} (-> {real})"
        raise UserFileError(f"the {what} {shown} is private (mode "
                            f"{stat.S_IMODE(st.st_mode):04o}): volbench runs as root and "
                            "reads a file an experiment names only when every user may "
                            f"read it; if it is yours to share, chmod o+r it")
    with os.fdopen(fd, "rb") as f:
        if st.st_size > limit:
            raise UserFileError(f"the {what} {path} is {_size(st.st_size)}, larger than the "
                                f"{_size(limit)} a {what} may be; is this the right file?")
        try:
            data = f.read(limit + 1)
        except OSError as exc:
            raise UserFileError(f"cannot read the {what} {path}: {exc.strerror}") from None
    if len(data) > limit:  # it grew while being read
        raise UserFileError(f"the {what} {path} is larger than the {_size(limit)} a {what} "
                            "may be; is this the right file?")
    return data


def read_text(path: Path, what: str, limit: int | None = None) -> str:
    """The file as UTF-8 text (UserFileError when it is not)."""
    data = read_bytes(path, what, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise UserFileError(f"the {what} {path} is not UTF-8 text (byte "
                            f"0x{data[exc.start]:02x} on line {line}); give a text "
                            "file") from None


# Kernel file systems whose "files" are the state of processes, devices and the kernel:
# never a script or job file, and, read as root, some are volbench's own secrets.
KERNEL_FS = frozenset({"proc", "sysfs", "debugfs", "tracefs", "securityfs", "configfs",
                       "cgroup", "cgroup2", "bpf", "efivarfs", "pstore", "fusectl",
                       "binfmt_misc", "hugetlbfs", "mqueue", "devpts", "autofs"})


def _kernel_filesystem(dev: int) -> str | None:
    """The type of the kernel file system device `dev` is a mount of (KERNEL_FS), or None.
    Found by the device number in /proc/self/mountinfo, so a link or a bind mount of
    /proc elsewhere is seen through."""
    wanted = f"{os.major(dev)}:{os.minor(dev)}"
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        fields, _, rest = line.partition(" - ")
        parts = fields.split()
        if len(parts) > 2 and parts[2] == wanted and rest.split()[:1]:
            fstype = rest.split()[0]
            if fstype in KERNEL_FS:
                return f"{fstype} ({parts[4]})"
    return None


def _size(n: int) -> str:
    return f"{n / MiB:g} MiB" if n >= MiB else f"{n / KiB:g} KiB" if n >= KiB else f"{n} bytes"
