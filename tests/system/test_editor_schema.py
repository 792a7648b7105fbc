"""`volbench schema` read by the real YAML language server, as VS Code and Neovim read it.

The server (npm's yaml-language-server, installed by scripts/setup's dev group into
.cache/yamlls) is started over stdio and spoken to in LSP: an experiment file whose first
line is `# yaml-language-server: $schema=volbench.schema.json` is opened, and the
diagnostics it publishes are what an editor underlines. A wrong field, choice and bound
are underlined on their lines; an example file gets none. The server also checks the
schema itself (it refused an enum with "4" and "4.0" as one number twice).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from support import ROOT, need
from volbench.cli.main import main

SERVER = ROOT / ".cache/yamlls/node_modules/yaml-language-server/bin/yaml-language-server"
MODELINE = "# yaml-language-server: $schema=volbench.schema.json\n"


class Server:
    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.next = 0
        self.buffer = b""

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        self.process.stdin.flush()

    def _more(self, deadline: float) -> None:
        """Read what the server wrote (select on the pipe itself: nothing is left in a
        buffer that select would not see)."""
        stdout = self.process.stdout
        assert stdout is not None
        if not select.select([stdout], [], [], max(0.0, deadline - time.monotonic()))[0]:
            raise TimeoutError("the YAML language server did not answer in time")
        chunk = os.read(stdout.fileno(), 65536)
        if not chunk:
            raise EOFError("the YAML language server ended")
        self.buffer += chunk

    def receive(self, deadline: float) -> dict[str, Any]:
        while b"\r\n\r\n" not in self.buffer:
            self._more(deadline)
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length"))
        while len(self.buffer) < length:
            self._more(deadline)
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        message: dict[str, Any] = json.loads(body)
        return message

    def request(self, method: str, params: dict[str, Any], deadline: float) -> None:
        self.next += 1
        self.send({"id": self.next, "method": method, "params": params})
        while self.receive(deadline).get("id") != self.next:
            pass

    def diagnostics(self, path: Path, deadline: float) -> list[dict[str, Any]]:
        """Open `path` and wait for the server's diagnostics of it (it answers requests of
        its own on the way: the settings an editor would give)."""
        self.send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": path.as_uri(), "languageId": "yaml", "version": 1,
            "text": path.read_text()}}})
        while True:
            message = self.receive(deadline)
            if "id" in message and "method" in message:
                items = message.get("params", {}).get("items", [])
                self.send({"id": message["id"], "result": [{} for _ in items]
                           if message["method"] == "workspace/configuration" else None})
            elif message.get("method") == "textDocument/publishDiagnostics" and \
                    message["params"]["uri"] == path.as_uri():
                found: list[dict[str, Any]] = message["params"]["diagnostics"]
                return found


@contextmanager
def server(folder: Path) -> Iterator[Server]:
    node = shutil.which("node")
    need(node is not None and SERVER.exists(), "the YAML language server is not installed "
         "(scripts/setup --with dev installs it with npm into .cache/yamlls)")
    assert node is not None
    process = subprocess.Popen([node, str(SERVER), "--stdio"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        lsp = Server(process)
        deadline = time.monotonic() + 60
        lsp.request("initialize", {"processId": os.getpid(), "rootUri": folder.as_uri(),
                                   "capabilities": {}}, deadline)
        lsp.send({"method": "initialized", "params": {}})
        lsp.send({"method": "workspace/didChangeConfiguration", "params": {"settings": {
            "yaml": {"validate": True, "schemaStore": {"enable": False}}}}})
        yield lsp
    finally:
        process.kill()
        process.wait(timeout=30)


def _file(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(MODELINE + text)
    return path


def test_an_editor_underlines_a_wrong_field_choice_and_bound(tmp_path: Path) -> None:
    assert main(["schema", "-o", str(tmp_path / "volbench.schema.json")]) == 0
    bad = _file(tmp_path, "bad.yaml", (
        "name: editor-check\n"                                       # line 1
        "targets:\n"
        "  - {name: a, type: loopdisk, size: 1G, fs: xfs}\n"
        "  - {name: b, type: btrfs, disks: 2, data: raid5}\n"        # line 4: choice
        "workloads:\n"
        "  - name: r\n"
        "    tool: fio\n"
        "    rw: randred\n"                                          # line 8: choice
        "    iodeth: 4\n"                                            # line 9: field
        "repeat: 0\n"))                                              # line 10: bound
    good = tmp_path / "load-curve.yaml"
    good.write_text(MODELINE + (ROOT / "examples/load-curve.yaml").read_text())
    with server(tmp_path) as lsp:
        found = lsp.diagnostics(bad, time.monotonic() + 60)
        clean = lsp.diagnostics(good, time.monotonic() + 60)
    lines = {d["range"]["start"]["line"]: d["message"] for d in found}
    assert sorted(lines) == [4, 8, 9, 10], found
    assert "raid0" in lines[4] and "randread" in lines[8]
    assert "iodeth" in lines[9] and "minimum of 1" in lines[10]
    assert clean == []


def test_every_example_is_clean_in_the_editor(tmp_path: Path) -> None:
    assert main(["schema", "-o", str(tmp_path / "volbench.schema.json")]) == 0
    examples = sorted((ROOT / "examples").glob("*.yaml"))
    with server(tmp_path) as lsp:
        for example in examples:
            path = _file(tmp_path, example.name, example.read_text())
            assert lsp.diagnostics(path, time.monotonic() + 60) == [], example.name


@pytest.mark.parametrize(("text", "said"), [
    ("targets: [{name: a, type: lvm, layout: stripped}]\n", "striped"),
    ("lab: {disks: [{name: d1, clas: fast}]}\n", "Property clas is not allowed"),
    ("workloads: [{name: w, tool: fio, faults: [{at: 5s, action: slow, target: a, "
     "delay_ms: 5}]}]\n", "not allowed"),  # an option of another action
    ("steady: {range: 120%}\n", "")])
def test_sections_are_checked_too(tmp_path: Path, text: str, said: str) -> None:
    """The wrong value is underlined on its own line (and says why, where it can)."""
    assert main(["schema", "-o", str(tmp_path / "volbench.schema.json")]) == 0
    line = 1
    if not text.startswith(("targets", "workloads")):
        text = "targets: [{name: a, type: loopdisk}]\nworkloads: [{name: w, tool: dd}]\n" + text
        line = 3
    with server(tmp_path) as lsp:
        found = lsp.diagnostics(_file(tmp_path, "s.yaml", text), time.monotonic() + 60)
    here = [d["message"] for d in found if d["range"]["start"]["line"] == line]
    assert here and any(said in m for m in here), found
