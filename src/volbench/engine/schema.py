"""`volbench schema`: the experiment file as a JSON Schema, for editors.

Derived from the declarations validation reads with (engine/filefields.py, each target
type's and workload tool's table, the sections' declarations in config/), so it cannot
drift from them: a field added to a table is in the schema at once, and a field read
without a declaration fails the tests (tests/conftest.py). With the YAML language server
(VS Code's YAML extension, Neovim's yamlls), a first line
`# yaml-language-server: $schema=volbench.schema.json` in an experiment file gives
completion, each field's help and default on hover, and a wrong name, type, choice or
bound underlined before anything runs (docs/experiments.md, "Editors").

Draft-07: the dialect the YAML language server knows best (`if`/`then` picks a target's
fields by its `type`, a workload's by its `tool`). What a schema cannot say (one field
only with another, a bound that depends on a second field, a file that must exist) is
left to volbench's own check; tests/unit/test_schema.py lists those cases.
"""

from __future__ import annotations

from typing import Any

from volbench import __version__
from volbench.config.sections import object_schema
from volbench.engine import filefields

DIALECT = "http://json-schema.org/draft-07/schema#"


def schema() -> dict[str, Any]:
    """The JSON Schema of an experiment file."""
    body = object_schema(filefields.FIELDS)
    return {
        "$schema": DIALECT,
        "title": "volbench experiment",
        "description": f"An experiment file of volbench {__version__}: targets (storage "
                       "layouts), workloads (tools), repetition. `volbench fields KIND` "
                       "prints a target type's or tool's fields.",
        **body,
    }
