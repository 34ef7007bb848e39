"""python -m clusterforge.cli: the same as the clusterforge command."""

import sys

from clusterforge.cli import main

sys.exit(main())
