"""`python -m volbench.lab --outdir OUT -- run FILE …`: volbench run inside the lab guest."""

import sys

from volbench.lab.guest import main

sys.exit(main())
