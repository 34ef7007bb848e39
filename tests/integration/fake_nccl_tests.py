"""A fake nccl-tests launcher for playbooks/validate.yml on local hosts (tests/integration/test_validate_local.py).

As the launcher (``fake_nccl_tests.py HOSTS BENCHMARK ARGS...``, HOSTS comma-separated) it logs the
run and fails, as NCCL does when a rank's HCA errors out, when FAKE_NCCL_BAD_HOST is one of HOSTS;
else it prints the real 2-node recording FAKE_NCCL_GOOD_OUTPUT. Called as the benchmark itself
(``all_reduce_perf -b ...``, a single-node run) it prints FAKE_NCCL_SINGLE_OUTPUT.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        sys.stdout.write(Path(os.environ["FAKE_NCCL_SINGLE_OUTPUT"]).read_text())
        return 0
    hosts = argv[0].split(",")
    with Path(os.environ["FAKE_NCCL_LOG"]).open("a") as log:
        log.write(json.dumps(hosts) + "\n")
    bad = os.environ["FAKE_NCCL_BAD_HOST"]
    if bad in hosts:
        sys.stderr.write(f"{bad}: transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer with error 12\n")
        return 1
    sys.stdout.write(Path(os.environ["FAKE_NCCL_GOOD_OUTPUT"]).read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
