"""The experiment file's fields, declared once (config/spec.py).

engine/experiment.py reads each of them with these declarations (its Reader carries
them down into every section); `volbench schema` states them as a JSON Schema
(engine/schema.py). A target's and a workload's own fields are their kind's table
(`TargetKind.fields`, `WorkloadKind.fields`), beside the common ones here; the sections
(`lab:`, `steady:`, `faults:`, `hosts:`, `load:`, `precondition:`) are declared beside
the code that reads them. A field read without a declaration is a test failure
(config/fields.py `undeclared`, tests/conftest.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from volbench.config import fieldrules
from volbench.config.faults import FAULTS
from volbench.config.lab import LAB
from volbench.config.precondition import PRECONDITION
from volbench.config.sections import Either, Kinds, Numbers, Section
from volbench.config.spec import Boolean, Field, Integer, Location, Size, Text, TextList
from volbench.config.steady import STEADY
from volbench.remote.hosts import HOSTS
from volbench.targets import KINDS as TARGET_KINDS
from volbench.workloads import KINDS as WORKLOAD_KINDS

ORDERS = ("interleaved", "shuffled", "sequential")
DEFAULT_WORKDIR = Path("/var/tmp/volbench")
UNTIL = ("decided", "steady")

NAME = Text("name", "experiment", pattern=fieldrules.NAME_PATTERN,
            help="the experiment's name: letters, digits, - _ .")
DESCRIPTION = Text("description", "", help="what the experiment is for, in words")
SERIES = Text("series", "", pattern=fieldrules.NAME_PATTERN,
              help="a key `volbench history` follows instead of the name")
ENTRY_NAME = Text("name", pattern=fieldrules.NAME_PATTERN,
                  help="its name, unique in the list: letters, digits, - _ .")

# -- targets ------------------------------------------------------------------------------
LIMITS = Section("limits", None, help="a disk class: throttle the target's devices (blkio)",
                 fields=(Integer("read_iops", None, minimum=1, help="read IOPS cap"),
                         Integer("write_iops", None, minimum=1, help="write IOPS cap"),
                         Size("read_bps", None, positive=True, help="read bytes/s cap (50M)"),
                         Size("write_bps", None, positive=True,
                              help="write bytes/s cap (50M)")))
TYPE = Text("type", help="the layout: `volbench fields` lists the types")
ON = TextList("on", [], help="the targets it is built on (an NFS export of another target)")
TARGETS = Kinds("targets", key="type", kinds=TARGET_KINDS,
                common=(ENTRY_NAME, TYPE, LIMITS, ON, PRECONDITION, SERIES),
                help="the storage layouts: each built, used and torn down")

# -- workloads ----------------------------------------------------------------------------
TOOL = Text("tool", help="the tool: `volbench fields` lists them")
WORKLOADS = Kinds("workloads", key="tool", kinds=WORKLOAD_KINDS,
                  common=(ENTRY_NAME, TOOL, FAULTS, SERIES),
                  help="what loads the targets; a list value on a field is a matrix axis")

# -- repetition and order -----------------------------------------------------------------
COUNT = Integer("repeat", 3, minimum=1, maximum=fieldrules.MAX_REPEAT,
                help="runs of every case on every target")
MIN = Integer("min", 3, minimum=1, maximum=fieldrules.MAX_REPEAT, help="rounds at least")
MAX = Integer("max", None, minimum=1, maximum=fieldrules.MAX_REPEAT,
              help="rounds at most (default: 10, or min when larger)")
REPEAT_UNTIL = Text("until", "decided", choices=UNTIL,
                    help="decided: every comparison; steady: every case steady (steady:)")
METRICS = TextList("metrics", [], help="the metrics to wait for (default: the headline ones)")
ADAPTIVE = Section("repeat", help="adaptive repetition: rounds until decided",
                   fields=(MIN, MAX, REPEAT_UNTIL, METRICS))
REPEAT = Either("repeat", 3, shapes=(COUNT, ADAPTIVE),
                help="runs per case (5), or {min: 3, max: 20, until: decided}")
WARMUP = Integer("warmup", 0, minimum=0, maximum=fieldrules.MAX_WARMUP,
                 help="uncounted rounds before the measured ones")
ORDER = Text("order", "interleaved", choices=ORDERS, help="how runs are ordered in a round")
SEED = Integer("seed", None, help="the seed of the shuffled order (default: a new one)")
BASELINE = Text("baseline", None, pattern=fieldrules.NAME_PATTERN,
                help="the target every other is compared with (default: the first)")
DROP_CACHES = Boolean("drop_caches", True, help="drop the page cache before each buffered run")
WORKDIR = Location("workdir", str(DEFAULT_WORKDIR),
                   help="where images and run directories go")
THRESHOLDS = Numbers("thresholds", None, above=0, below=1,
                     help="the practical threshold per metric, as a fraction (iops: 0.05)")

FIELDS: tuple[Field[Any], ...] = (
    NAME, DESCRIPTION, TARGETS, WORKLOADS, HOSTS, REPEAT, WARMUP, ORDER, SEED, BASELINE,
    DROP_CACHES, WORKDIR, THRESHOLDS, LAB, STEADY, SERIES)
