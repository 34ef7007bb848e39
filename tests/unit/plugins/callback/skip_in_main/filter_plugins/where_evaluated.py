"""Test filter: appends the evaluating process's PID to $WHERE_EVALUATED, returns its input."""

from __future__ import annotations

import os


def where_evaluated(value):
    with open(os.environ["WHERE_EVALUATED"], "a", encoding="utf-8") as out:
        out.write(f"{os.getpid()}\n")
    return value


class FilterModule:
    def filters(self):
        return {"where_evaluated": where_evaluated}
