"""promtool and amtool for the monitoring tests: where tests/tools/monitoring-tools.sh puts them."""

from __future__ import annotations

import subprocess

from tests.paths import PROJECT

TOOLS = PROJECT / ".clusterforge" / "tools" / "bin"
SETUP = PROJECT / "tests" / "tools" / "monitoring-tools.sh"


def run(*argv) -> subprocess.CompletedProcess:
    return subprocess.run([str(arg) for arg in argv], capture_output=True, text=True, check=False)
