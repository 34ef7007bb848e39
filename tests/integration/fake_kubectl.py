#!/usr/bin/env python3
"""A stand-in for kubectl (get node -o json, annotate, drain, uncordon) over a JSON file of nodes
($FAKE_KUBE_STATE: name -> {"unschedulable", "annotations", "pods"}), logging each call to
$FAKE_KUBE_LOG, one JSON list a line. Output as kubectl prints it."""

from __future__ import annotations

import fcntl
import json
import os
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    # Ansible runs the hosts in parallel: one call at a time reads and writes the state file.
    with Path(os.environ["FAKE_KUBE_STATE"] + ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return locked(argv)


def locked(argv: list[str]) -> int:
    state_file = Path(os.environ["FAKE_KUBE_STATE"])
    with Path(os.environ["FAKE_KUBE_LOG"]).open("a") as log:
        log.write(json.dumps(argv) + "\n")
    nodes = json.loads(state_file.read_text())
    words = [arg for arg in argv if not arg.startswith("-")]
    verb, name = words[0], words[-1] if words[0] in ("drain", "uncordon") else words[2]
    node = nodes.get(name)
    if node is None:
        print(f'Error from server (NotFound): nodes "{name}" not found', file=sys.stderr)
        return 1
    if verb == "get":
        document = {"metadata": {"name": name, "annotations": node["annotations"]}, "spec": {}}
        if node["unschedulable"]:
            document["spec"]["unschedulable"] = True
        print(json.dumps(document))
    elif verb == "annotate":
        annotate(node, name, words[3])
    elif verb == "drain":
        print(f"node/{name} {'already cordoned' if node['unschedulable'] else 'cordoned'}")
        for pod in range(node["pods"]):
            print(f"evicting pod default/job-{pod}", file=sys.stderr)
        node.update(unschedulable=True, pods=0)
        print(f"node/{name} drained")
    elif verb == "uncordon":
        print(f"node/{name} {'uncordoned' if node['unschedulable'] else 'already uncordoned'}")
        node["unschedulable"] = False
    state_file.write_text(json.dumps(nodes))
    return 0


def annotate(node: dict, name: str, change: str) -> None:
    if change.endswith("-"):
        node["annotations"].pop(change[:-1], None)
    else:
        key, value = change.split("=", 1)
        node["annotations"][key] = value
    print(f"node/{name} annotated")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
