"""Packages come by name through apt-get and pip from the sources the machine is
configured with: no package host (nor any other download address) is written into
src, tests, scripts, bench or .ci. The few addresses that are not downloads are listed."""

from __future__ import annotations

import re
from pathlib import Path

from support import ROOT

FOLDERS = ("src", "tests", "scripts", "bench", ".ci")
# Not places to fetch from: the SVG namespace, the local browser's debug port, the
# licence line in dd's captured --version output, and the JSON Schema dialect's name
# (`$schema` of `volbench schema`: an identifier editors know, never fetched).
NOT_DOWNLOADS = {"http://www.w3.org", "http://127.0.0.1", "https://gnu.org",
                 "http://json-schema.org"}
# Database connection strings (postgresql://…, the team store's --db, also with a driver:
# postgresql+psycopg://) name a server to talk to, not a place to download from: they are
# not addresses in this sense. Nor is a scheme with no host (the redaction tests' odd
# schemes: `a-b://:PW@/db`): it names no server at all.
DATABASE = re.compile(r"(postgres(ql)?|mysql|oracle)(\+[a-z0-9]+)?://", re.I)
URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^/:\s\"'<>)]*")
# Hosts a package download might name without a scheme.
HOSTS = re.compile(r"\b(deb\.debian\.org|archive\.debian\.org|security\.debian\.org|"
                   r"archive\.ubuntu\.com|ports\.ubuntu\.com|pypi\.org|pythonhosted\.org|"
                   r"apt\.postgresql\.org|ftp\.postgresql\.org|launchpad\.net)\b")


def project_files() -> list[Path]:
    files = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and not {"__pycache__", ".mypy_cache"} & set(path.parts) \
                    and path != Path(__file__):  # this file's examples
                files.append(path)
    return files


def addresses(text: str) -> set[str]:
    found = {m.group(0) for m in URL.finditer(text)}
    return {a for a in found if a not in NOT_DOWNLOADS and not DATABASE.match(a)
            and not a.endswith("://")} | set(HOSTS.findall(text))


def test_no_download_address_in_the_project() -> None:
    files = project_files()
    assert len(files) > 300  # the walk found the project
    found = {}
    for path in files:
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        if hits := addresses(text.replace("file://", "")):  # file:// names a local path
            found[str(path.relative_to(ROOT))] = sorted(hits)
    assert found == {}, ("packages by name only (apt-get, pip) from the configured sources; "
                         "these files name an address: " + repr(found))


def test_the_check_sees_an_address_and_a_bare_host() -> None:
    assert addresses('mirror="${MIRROR:-http://deb.debian.org/debian}"') == {
        "http://deb.debian.org", "deb.debian.org"}
    assert addresses("pool at ftp://example.net/pool/x.deb") == {"ftp://example.net"}
    assert addresses("pip install pgserver; xmlns='http://www.w3.org/2000/svg'") == set()
    assert addresses("--db postgresql://team@db.example/results") == set()
    assert addresses("postgresql+psycopg://u@h/db and a-b://:x@/db") == set()
    assert addresses("mirror at http2://example.net/pool") == {"http2://example.net"}
