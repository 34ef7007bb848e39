"""Text shown to the operator during and after a run: paths with ~, failure messages without the
host said twice and with per-GPU repeats merged, task results in one line."""

from __future__ import annotations

import re

import hostlist

from clusterforge.paths import home as home  # re-exported: the run summary's paths
from clusterforge.runner.record import TaskRecord

# "<prefix><PCI bus id>: <note>", one part of a "; "-joined message (gpu_judge's per-GPU notes).
_BUS_PART = re.compile(r"^(?P<prefix>.*?)(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]): (?P<note>.*)$")


def clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes:02d}:{secs:02d}"


def duration(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 60 else clock(seconds)


def merge_gpus(text: str, gpus: int = 0) -> str:
    """ "B1: held down by X; B2: held down by X; ..." becomes "8/8 GPUs: held down by X" (the total
    when known, else the count alone); a trailing " (...)" on the last part stays after it."""
    parts = text.split("; ")
    merged: list[str] = []
    index = 0
    while index < len(parts):
        first = _BUS_PART.match(parts[index])
        if not first:
            merged.append(parts[index])
            index += 1
            continue
        note, suffix, end = first["note"], "", index + 1
        while end < len(parts):
            part = _BUS_PART.match(parts[end])
            if not part or part["prefix"]:
                break
            if part["note"] == note:
                end += 1
                continue
            if part["note"].startswith(note + " ("):
                suffix = part["note"][len(note) :]
                end += 1
            break
        count = end - index
        if count > 1:
            total = f"/{gpus}" if gpus >= count else ""
            merged.append(f"{first['prefix']}{count}{total} GPUs: {note}{suffix}")
        else:
            merged.append(parts[index])
        index = end
    return "; ".join(merged)


def failure_text(host: str, message: str, gpus: int = 0) -> str:
    """A failure message for a line that already names the host: without "<host>: " again."""
    for prefix in (f"{host}: ", f"[{host}]: "):
        if message.startswith(prefix):
            message = message[len(prefix) :]
    return merge_gpus(message, gpus)


def task_counts(task: TaskRecord) -> str:
    """ "ok 2, changed 1, failed 0, skipped 0" plus unreachable and ignored when there are any."""
    counts = task.counts()
    shown = ["ok", "changed", "failed", "skipped"] + [k for k in ("unreachable", "ignored") if counts[k]]
    return ", ".join(f"{key} {counts[key]}" for key in shown)


def group_messages(messages) -> list[tuple[list[str], str, str]]:
    """The same text from many hosts once: (hosts, task, text), texts in the order first seen,
    hosts sorted by name (node2 before node10): forks finish in any order, the display does not."""
    grouped: dict[tuple[str, str, str], list[str]] = {}
    for message in messages:
        grouped.setdefault((message.task, message.kind, message.text), []).append(message.host)
    return [
        (hostlist.numerically_sorted(hosts), task, text if kind == "debug" else f"failed (ignored): {text}")
        for (task, kind, text), hosts in grouped.items()
    ]


def hosts_list(hosts: list[str], limit: int = 6) -> str:
    if len(hosts) <= limit:
        return ", ".join(hosts)
    return f"{', '.join(hosts[:limit])} and {len(hosts) - limit} more"
