"""pgbench's command line as pgbench reads it (getopt_long), for `options:` and
`init_options:`.

A check on the words as written misses what getopt accepts: bundled short options
(`-Cf/abs/evil.sql@1` is `-C -f /abs/evil.sql@1`, `-Upostgres` is `-U postgres`) and
unambiguous prefixes of long ones (`--user=postgres` is `--username`). So the options
are read into (option, value) pairs the way pgbench 13-18 read them, checked, and handed
to pgbench again in one spelling (`--name=value`), with every script file (`-f`)
replaced by its copy in the run directory (pgbench.py). These checks are early,
friendly errors; the wall is the sandbox pgbench runs in (system/sandbox.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# Long options that take a value, and those that do not (pgbench 13-18, --help and
# pgbench.c's long_options). -d is --debug up to 16 and --dbname from 17: refused below.
WITH_VALUE = ("aggregate-interval", "builtin", "client", "dbname", "define", "file",
              "fillfactor", "host", "index-tablespace", "init-steps", "jobs", "latency-limit",
              "log-prefix", "max-tries", "partition-method", "partitions", "port", "progress",
              "protocol", "random-seed", "rate", "sampling-rate", "scale", "show-script",
              "tablespace", "time", "transactions", "username")
FLAGS = ("connect", "debug", "exit-on-abort", "failures-detailed", "foreign-keys", "help",
         "initialize", "log", "no-vacuum", "progress-timestamp", "quiet", "report-latencies",
         "report-per-command", "select-only", "skip-some-updates", "unlogged-tables",
         "vacuum-all", "verbose-errors", "version")
SHORT = {"b": "builtin", "c": "client", "D": "define", "f": "file", "F": "fillfactor",
         "h": "host", "I": "init-steps", "j": "jobs", "L": "latency-limit", "M": "protocol",
         "p": "port", "P": "progress", "R": "rate", "s": "scale", "t": "transactions",
         "T": "time", "U": "username", "d": "dbname", "C": "connect", "i": "initialize",
         "l": "log", "n": "no-vacuum", "N": "skip-some-updates", "q": "quiet",
         "r": "report-latencies", "S": "select-only", "v": "vacuum-all", "V": "version",
         "?": "help"}
# Set by volbench (the connection, the database, what it logs and reports), or not a
# benchmark at all (help, version).
MANAGED = {
    "host": "the connection is volbench's", "port": "the connection is volbench's",
    "username": "pgbench connects as the benchmark role, volbench_bench",
    "dbname": "the database is volbench's (use --debug for debug output)",
    "initialize": "use mode: init", "scale": "use the workload's scale field",
    "log": "volbench writes the transaction log itself",
    "log-prefix": "volbench writes the transaction log itself",
    "progress": "volbench reads pgbench's progress every second",
    "help": "it runs no benchmark", "version": "it runs no benchmark",
}
_WEIGHT = re.compile(r"@\d+$")


@dataclass(frozen=True)
class Option:
    """One option as pgbench reads it: its long name, its value, where it was written."""

    name: str
    value: str | None
    index: int  # the entry of the options list it came from

    def render(self) -> str:
        """How it is shown in a message."""
        return f"--{self.name}" if self.value is None else f"--{self.name}={self.value}"

    def words(self) -> list[str]:
        """How it is handed to pgbench: `--name=value`; a script file as `--file PATH`,
        where the multi-host driver finds the files to upload."""
        if self.name == "file" and self.value is not None:
            return ["--file", self.value]
        return [self.render()]


def _long(word: str) -> str | None:
    """The long option a name (or an unambiguous prefix of one) means, as getopt_long."""
    every = (*WITH_VALUE, *FLAGS)
    if word in every:
        return word
    found = [name for name in every if name.startswith(word)]
    return found[0] if len(found) == 1 else None


def parse(words: Sequence[str]) -> tuple[list[Option], list[tuple[int, str]]]:
    """The options pgbench would read from `words`, and (index, why) for what it would not
    take or volbench does not allow."""
    options: list[Option] = []
    problems: list[tuple[int, str]] = []
    i = 0
    while i < len(words):
        word, start = words[i], i
        i += 1
        if word.startswith("--") and len(word) > 2:
            key, eq, value = word[2:].partition("=")
            name = _long(key)
            if name is None:
                problems.append((start, f"{word}: not a pgbench option (or an ambiguous "
                                        "abbreviation of several)"))
                continue
            if name in WITH_VALUE and not eq:
                if i >= len(words):
                    problems.append((start, f"{word} needs a value"))
                    continue
                value, i = words[i], i + 1
            elif name in FLAGS and eq:
                problems.append((start, f"{word}: --{name} takes no value"))
                continue
            options.append(Option(name, value if name in WITH_VALUE else None, start))
        elif word.startswith("-") and len(word) > 1 and word != "--":
            i = _bundle(words, word, start, i, options, problems)
        else:
            problems.append((start, f"{word!r} is not an option: the database and every "
                                    "argument volbench does not set go as options"))
    return options, problems + [(o.index, f"{o.render()} is set by volbench: "
                                 f"{MANAGED[o.name]}") for o in options if o.name in MANAGED]


def _bundle(words: Sequence[str], word: str, start: int, i: int, options: list[Option],
            problems: list[tuple[int, str]]) -> int:
    """Short options, bundled as getopt reads them: flags until one that takes a value,
    which takes the rest of the word, or the next word."""
    for k, letter in enumerate(word[1:], 1):
        name = SHORT.get(letter)
        if name is None:
            problems.append((start, f"{word}: -{letter} is not a pgbench option"))
            return i
        if name in WITH_VALUE:
            value = word[k + 1:]
            if not value:
                if i >= len(words):
                    problems.append((start, f"{word}: -{letter} needs a value"))
                    return i
                value, i = words[i], i + 1
            options.append(Option(name, value, start))
            return i
        options.append(Option(name, None, start))
    return i


def script_path(value: str) -> str:
    """The file of a `--file` value (FILE or FILE@WEIGHT)."""
    return _WEIGHT.sub("", value)


def rendered(options: Sequence[Option], copy: Callable[[str], str]) -> list[str]:
    """The options in one spelling, each script file replaced by `copy(file)` (its
    weight kept)."""
    out = []
    for option in options:
        if option.name == "file" and option.value is not None:
            weight = option.value[len(script_path(option.value)):]
            option = Option("file", copy(script_path(option.value)) + weight, option.index)
        out += option.words()
    return out
