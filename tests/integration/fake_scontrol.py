#!/usr/bin/env python3
"""A stand-in for Slurm's scontrol (show node, update nodename=... state=drain|resume) over a JSON
file of node states ($FAKE_SLURM_STATE), logging each call to $FAKE_SLURM_LOG, one JSON list a line.

A node's "jobs" counts the `show node` calls it stays busy for: MIXED, and MIXED+DRAIN once drained."""

from __future__ import annotations

import sys

from fake_state import serve  # the script's own folder is on sys.path


def main(argv: list[str]) -> int:
    return serve(argv, "FAKE_SLURM_STATE", "FAKE_SLURM_LOG", handle)


def handle(nodes: dict, argv: list[str]) -> int | None:
    if argv[:2] == ["show", "node"]:
        code = show(nodes, argv[2])
    elif argv[0] == "update":
        code = update(nodes, dict(arg.split("=", 1) for arg in argv[1:]))
    else:
        print(f"fake scontrol: unsupported {argv}", file=sys.stderr)
        return None
    return code


def show(nodes: dict, name: str) -> int:
    node = nodes.get(name)
    if node is None:
        print(f"Node {name} not found", file=sys.stderr)
        return 1
    base = "MIXED" if node["jobs"] > 0 else "IDLE"
    node["jobs"] = max(node["jobs"] - 1, 0)
    state = base + ("+DRAIN" if node["drain"] else "")
    print(f"NodeName={name} Arch=x86_64 CoresPerSocket=4\n   CPUAlloc=0 CPUTot=8 CPULoad=0.01")
    print(f"   State={state} ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A")
    if node["reason"]:
        print(f"   Reason={node['reason']} [root@2026-12-01T10:00:00]")
    return 0


def update(nodes: dict, args: dict) -> int:
    node = nodes.get(args.get("nodename"))
    if node is None:
        print("scontrol: error: Invalid node name specified", file=sys.stderr)
        return 1
    if args["state"] == "drain":
        node.update(drain=True, reason=args["reason"])
    elif args["state"] == "resume" and node["drain"]:
        node.update(drain=False, reason="")
    else:
        print("scontrol: error: Invalid node state specified", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
