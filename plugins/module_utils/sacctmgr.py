"""Slurm's accounting tables as `sacctmgr --parsable2 show ...` (and `squeue --format=...|...`) print them.

The commands are run WITH their header line: the header names the columns, so the parser checks it
read the columns it asked for instead of trusting a count of "|" (another tool's table, nvidia-smi's
for one, has "|" too). Values are normalised for comparison: TRES lists to mappings, durations to
seconds, lists to sorted tuples.

Stdlib only: Ansible ships this file to the controller as ``ansible.module_utils.sacctmgr``.
"""

from __future__ import annotations

import re

from ansible.module_utils.verdicts import ParseError

# format= field -> the title sacctmgr prints for it in the header (Slurm 24.11; the titles of the
# fields whose name and title differ were read from the real outputs in tests/fixtures/sacctmgr).
TITLES = {
    "Cluster": "Cluster",
    "Account": "Account",
    "User": "User",
    "Partition": "Partition",
    "ParentName": "ParentName",
    "Share": "Share",
    "GrpTRES": "GrpTRES",
    "MaxTRES": "MaxTRES",
    "MaxTRESPerUser": "MaxTRESPU",
    "MaxWall": "MaxWall",
    "QOS": "QOS",
    "DefaultQOS": "Def QOS",
    "Name": "Name",
    "Priority": "Priority",
    "Preempt": "Preempt",
    "PreemptMode": "PreemptMode",
    "UsageFactor": "UsageFactor",
    "Description": "Descr",
    "Organization": "Org",
    "DefaultAccount": "Def Acct",
    "Type": "Type",
    "ID": "ID",
}
# squeue --format=%i|%u|%a|%q|%T prints these titles.
SQUEUE_FORMAT = "%i|%u|%a|%q|%T"
SQUEUE_TITLES = ("JOBID", "USER", "ACCOUNT", "QOS", "STATE")

_DURATION = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


def parse_table(text: str, fields, source: str = "sacctmgr") -> list[dict[str, str]]:
    """Rows of a `--parsable2` table whose header must be exactly the titles of `fields` (format=
    names, TITLES), each row a mapping field -> value ('' where unset)."""
    titles = [TITLES.get(field, field) for field in fields]
    return _rows(text, fields, titles, source)


def parse_squeue(text: str, source: str = "squeue") -> list[dict[str, str]]:
    """Jobs of `squeue --format=` SQUEUE_FORMAT: mappings with keys JOBID, USER, ACCOUNT, QOS, STATE."""
    return _rows(text, SQUEUE_TITLES, SQUEUE_TITLES, source)


def parse_any_table(text: str, source: str = "sacctmgr") -> list[dict[str, str]]:
    """Rows of any `sacctmgr --parsable2 show` table whose header holds only titles of TITLES, keyed by
    those titles (for reading a capture without knowing its command)."""
    lines = text.replace("\r", "").splitlines()
    if not lines or not lines[0].strip():
        raise ParseError("empty output, expected a header line of column titles", source=source)
    titles = lines[0].rstrip("\n").split("|")
    unknown = [title for title in titles if title not in TITLES.values()]
    if unknown:
        raise ParseError(f"not a sacctmgr --parsable2 header: unknown titles {unknown}", source=source, line=1)
    return _rows(text, titles, titles, source)


def _rows(text: str, keys, titles, source: str) -> list[dict[str, str]]:
    lines = text.replace("\r", "").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise ParseError(f"empty output, expected the header {'|'.join(titles)}", source=source)
    if lines[0].split("|") != list(titles):
        raise ParseError(f"expected the header {'|'.join(titles)}, found {lines[0][:200]!r}", source=source, line=1)
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        values = line.split("|")
        if len(values) != len(titles):
            raise ParseError(
                f"expected {len(titles)} columns separated by '|', found {len(values)}: {line[:200]!r}",
                source=source,
                line=number,
            )
        rows.append(dict(zip(keys, values)))  # noqa: B905 (3.8 nodes; lengths checked above)
    return rows


def parse_tres(text: str, source: str = "TRES") -> dict[str, int]:
    """'cpu=10,gres/gpu=4' -> {'cpu': 10, 'gres/gpu': 4}; '' -> {}."""
    tres: dict[str, int] = {}
    for item in filter(None, text.split(",")):
        name, sep, count = item.partition("=")
        if not sep or not name or not re.match(r"^-?\d+$", count):
            raise ParseError(f"expected name=count items separated by ',', found {text!r}", source=source)
        tres[name] = int(count)
    return tres


def duration_seconds(text: str) -> int | None:
    """Seconds of a Slurm duration: minutes, minutes:seconds, hours:minutes:seconds, days-hours,
    days-hours:minutes, days-hours:minutes:seconds (sacctmgr prints [days-]hours:minutes:seconds);
    None for '' or -1 or UNLIMITED (no limit)."""
    text = str(text).strip()
    if text in ("", "-1", "UNLIMITED", "INFINITE"):
        return None
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"not a Slurm duration: {text!r}")
    days, first, second, third = match.groups()
    if days is not None:
        hours, minutes, seconds = int(first), int(second or 0), int(third or 0)
        return ((int(days) * 24 + hours) * 60 + minutes) * 60 + seconds
    if third is not None:
        return (int(first) * 60 + int(second)) * 60 + int(third)
    if second is not None:
        return int(first) * 60 + int(second)
    return int(first) * 60
