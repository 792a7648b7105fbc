"""The last resort: an exception nobody expected is a bug. The user gets one line
saying so and where the full traceback was saved, to attach to a bug report."""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

from volbench import __version__
from volbench.store.redaction import clean, redact
from volbench.system.journal import state_dir


def save(exc: BaseException, argv: Sequence[str] | None = None) -> str:
    """Write `exc`'s traceback to a file; the one line to print."""
    text = (f"volbench {__version__}, Python {sys.version.split()[0]}\n"
            # A --db URL's password never goes into the file (docs/store.md).
            f"command: volbench {' '.join(map(redact, sys.argv[1:] if argv is None else argv))}"
            "\n\n"
            # ... nor one an exception's message quotes.
            + redact("".join(traceback.format_exception(exc))))
    text = clean(text)  # any password seen (a --db's, PGPASSWORD's), however it is quoted
    name = f"crash-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.txt"
    where: Path | None = None
    # The state directory first (journals live there); the temporary directory if the
    # state directory cannot be written (not root, full, read-only).
    for folder in (state_dir(), Path(tempfile.gettempdir())):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
        except OSError:
            continue
        where = folder / name
        break
    what = f"{type(exc).__name__}: {_short(clean(redact(str(exc))))}"
    saved = f"the full traceback is in {where}" if where else "the traceback could not be saved"
    return (f"internal error ({what}); {saved}. This is a bug in volbench: please report it "
            "with that file and the command you ran")


def _short(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 120 else line[:120] + "…"
