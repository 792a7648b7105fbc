"""pgbench script files: read (a regular file, at most 1 MiB of UTF-8), checked for
meta-commands that run shell commands, copied into the run directory for pgbench.

`\\shell` and `\\setshell` run a shell command. Inside pgbench's sandbox they could do no
more than its user there (system/sandbox.py), but a benchmark has no use for them, and
saying so when the file is read beats a failed run. pgbench reads a backslash command
anywhere outside quotes and comments (`SELECT 1; \\shell …`, `/* c */ \\shell …`), in any
case of its name (`\\SHELL`), so the check follows pgbench's lexer (psqlscan: SQL
comments `--` and `/* */` nested, strings `'…'`, `E'…'`, dollar quotes, quoted
identifiers) rather than line starts. It is the friendly check; the sandbox is the wall.
"""

from __future__ import annotations

import re
from pathlib import Path

from volbench.config import userfile

KIND = "pgbench script"
SHELL_COMMANDS = ("shell", "setshell")
SHELL_FIX = ("remove it; run commands as a `command` workload (which can run as another "
             "user:), or compute the value in SQL")
_WORD = re.compile(r"[A-Za-z0-9_\x80-\U0010ffff]+")
_DOLLAR = re.compile(r"\$([A-Za-z_\x80-\U0010ffff][A-Za-z0-9_\x80-\U0010ffff]*)?\$")


def meta_commands(text: str) -> list[tuple[int, str]]:
    """(line, name) of every backslash command pgbench would read in `text`."""
    found: list[tuple[int, str]] = []
    i, line, depth, n = 0, 1, 0, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
        if depth:  # inside /* */, which nests in PostgreSQL
            if text.startswith("*/", i):
                depth, i = depth - 1, i + 2
                continue
            if text.startswith("/*", i):
                depth, i = depth + 1, i + 2
                continue
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            continue
        elif text.startswith("--", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
            continue
        elif c in "'\"":
            i, line = _skip_quoted(text, i, line, escapes=c == "'" and _e_string(text, i))
            continue
        elif c == "$" and (m := _DOLLAR.match(text, i)) and not _in_word(text, i):
            end = text.find(m.group(0), m.end())
            end = n if end < 0 else end + len(m.group(0))
            line += text.count("\n", i, end)
            i = end
            continue
        elif c == "\\":
            word = _WORD.match(text, i + 1)
            if word:
                found.append((line, word.group(0)))
                i = word.end()
                continue
        i += 1
    return found


def _e_string(text: str, i: int) -> bool:
    """Is the quote at `i` an E'…' string, where a backslash escapes a quote?"""
    return i > 0 and text[i - 1] in "eE" and not (i > 1 and _WORD.match(text[i - 2]))


def _in_word(text: str, i: int) -> bool:
    return i > 0 and bool(_WORD.match(text[i - 1]))


def _skip_quoted(text: str, i: int, line: int, escapes: bool) -> tuple[int, int]:
    """Past the quoted string or identifier starting at `i` (a doubled quote is one)."""
    quote, j, n = text[i], i + 1, len(text)
    while j < n:
        c = text[j]
        if c == "\n":
            line += 1
        if escapes and c == "\\":
            j += 2
            continue
        if c == quote:
            if text.startswith(quote * 2, j):
                j += 2
                continue
            return j + 1, line
        j += 1
    return n, line


def problem(text: str, where: str) -> str | None:
    """Why a script's text cannot run (a \\shell or \\setshell in it), or None."""
    for line, name in meta_commands(text):
        if name.lower() in SHELL_COMMANDS:
            return f"{where}:{line} uses \\{name}, which runs a shell command; {SHELL_FIX}"
    return None


def read(path: Path) -> str:
    """A script file's text, checked (UserFileError, or ValueError naming the line)."""
    text = userfile.read_text(path, KIND)
    why = problem(text, str(path))
    if why is not None:
        raise ValueError(why)
    return text


def copy_name(index: int, path: str) -> str:
    """The name of a script's copy in the run directory's `scripts/` folder."""
    return f"{index}-{Path(path).name}"
