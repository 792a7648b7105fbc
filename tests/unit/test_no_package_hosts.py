"""Packages come by name through apt-get and pip from the sources the machine is
configured with: the project names no place to download from, anywhere (code, tests,
scripts, benches, CI, docs). The check lists no host to look for (it would itself name
package hosts, which the project must not): it refuses every address a download tool
could fetch from, whatever its host, and every line that would point a package tool at
a source of its own. The few addresses that are not downloads are listed."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from support import ROOT

# Schemes package tools and downloaders fetch from.
DOWNLOAD_SCHEMES = ("http", "https", "ftp", "ftps", "rsync", "git", "s3", "gs", "hg", "svn")
URL = re.compile(rf"\b({'|'.join(DOWNLOAD_SCHEMES)})://([^/\s\"'<>)`]*)", re.IGNORECASE)
# Not places to fetch from: the SVG namespace, this machine (the local browser's debug
# port), the licence line in dd's captured --version output, and the JSON Schema
# dialect's name (`$schema` of `volbench schema`: an identifier editors know, never
# fetched).
NOT_DOWNLOADS = {"http://www.w3.org", "https://gnu.org", "http://json-schema.org"}
LOCAL = re.compile(r"^(127\.0\.0\.1|localhost|\[::1\])(:[\w{}]+)?$")
# A package tool pointed at a source of its own, with or without an address: pip's
# index options and variables, an apt source line or file, a download command.
# (An option given a value: a test that pip's argv holds none names them bare.)
SOURCE_OF_ITS_OWN = re.compile(
    r"--((extra-)?index-url|trusted-host|find-links)[ =]\S|\bPIP_(EXTRA_)?INDEX_URL\b|"
    r"\bPIP_TRUSTED_HOST\b|\bUV_(EXTRA_)?INDEX_URL\b|^\s*deb(-src)?\s+(\[|\$|\w+://)|"
    r"sources\.list\b|\b(wget|curl)\s+\S+|\bgit\s+clone\b", re.MULTILINE)
# The places where this file's own examples are allowed to say what they refuse.
THIS = Path(__file__)


def project_files() -> list[Path]:
    """Every file git tracks, and every new one not ignored."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [ROOT / name for name in listed.splitlines()
            if (ROOT / name).is_file() and ROOT / name != THIS]


def addresses(text: str) -> set[str]:
    """Download addresses in `text`, and lines pointing a package tool elsewhere."""
    found = set()
    for m in URL.finditer(text):
        address = f"{m.group(1).lower()}://{m.group(2)}"
        if address not in NOT_DOWNLOADS and not LOCAL.match(m.group(2)):
            found.add(address)
    found |= {m.group(0).strip() for m in SOURCE_OF_ITS_OWN.finditer(text)}
    return found


def test_no_download_address_in_the_project() -> None:
    files = project_files()
    assert len(files) > 400  # the walk found the project
    found = {}
    for path in files:
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        if hits := addresses(text):
            found[str(path.relative_to(ROOT))] = sorted(hits)
    assert found == {}, ("packages by name only (apt-get, pip) from the configured sources; "
                         "these files name a place to download from: " + repr(found))


def test_the_check_sees_any_address_and_any_source_of_its_own() -> None:
    # Any host at all, spelt any way: no host is listed to find these.
    assert addresses("mirror at HTTPS://mirror.example.net/pool/x.deb") == {
        "https://mirror.example.net"}
    assert addresses("fetch ftp://10.0.0.9/pool and rsync://m.example/x") == {
        "ftp://10.0.0.9", "rsync://m.example"}
    assert addresses("pip install --index-url $MIRROR pkg") == {"--index-url $"}
    assert addresses("pip install --extra-index-url=x pkg") == {"--extra-index-url=x"}
    assert addresses('assert not {"--index-url", "-i"} & set(argv)') == set()
    assert addresses("export PIP_INDEX_URL=x") == {"PIP_INDEX_URL"}
    assert addresses("deb [trusted=yes] $MIRROR bookworm main") == {"deb ["}
    assert addresses("curl -fsSL $X | sh") == {"curl -fsSL"}
    # Not downloads: connection strings, local addresses, the SVG namespace, odd schemes.
    assert addresses("--db postgresql://team@db.example/results") == set()
    assert addresses("postgressql://u:PW@h/db and a-b://:x@/db") == set()
    assert addresses("xmlns='http://www.w3.org/2000/svg' http://127.0.0.1:9222") == set()
    assert addresses("pip install pgserver; apt-get install debootstrap") == set()
