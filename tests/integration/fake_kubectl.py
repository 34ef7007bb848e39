#!/usr/bin/env python3
"""A stand-in for kubectl (get node -o json, annotate, drain, uncordon) over a JSON file of nodes
($FAKE_KUBE_STATE: name -> {"unschedulable", "annotations", "pods"}), logging each call to
$FAKE_KUBE_LOG, one JSON list a line. Output as kubectl prints it."""

from __future__ import annotations

import json
import sys

from fake_state import serve  # the script's own folder is on sys.path


def main(argv: list[str]) -> int:
    return serve(argv, "FAKE_KUBE_STATE", "FAKE_KUBE_LOG", handle)


def handle(nodes: dict, argv: list[str]) -> int:
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
