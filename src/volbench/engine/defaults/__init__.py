"""The built-in default experiment (and its fallback without root)."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Any

from volbench.engine.experiment import Experiment, load_yaml, parse_document

NONROOT_DIR = Path(f"/var/tmp/volbench-{os.getuid()}/default-dir")


def default_document() -> dict[str, Any]:
    """The built-in default experiment (default.yaml, shipped in the package) as a document."""
    text = resources.files("volbench.engine.defaults").joinpath("default.yaml").read_text()
    doc = load_yaml(text)
    assert isinstance(doc, dict)
    return doc


def default_experiment(root: bool | None = None) -> tuple[Experiment, str | None]:
    """The default experiment, and a note when it had to fall back (not root)."""
    doc = default_document()
    if root is None:
        root = os.geteuid() == 0
    if root:
        return parse_document(doc, "built-in default"), None
    NONROOT_DIR.mkdir(parents=True, exist_ok=True)
    doc["name"] = "default-nonroot"
    doc["targets"] = [{"name": "directory", "type": "directory", "path": str(NONROOT_DIR)}]
    doc["baseline"] = "directory"
    doc["drop_caches"] = False
    note = (f"not running as root: loop disks, filesystems and throttling need root, so the "
            f"default experiment runs on one directory ({NONROOT_DIR}) instead")
    return parse_document(doc, "built-in default (no root)"), note
