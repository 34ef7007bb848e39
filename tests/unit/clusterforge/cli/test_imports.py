"""What every clusterforge command pays before it starts: the Docker SDK only for lab commands."""

from __future__ import annotations

import subprocess
import sys


def test_the_cli_loads_without_the_docker_sdk():
    code = (
        "import sys, clusterforge.cli; clusterforge.cli.build_parser(); "
        "print(sorted(m for m in sys.modules if m == 'docker' or m.startswith('docker.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
