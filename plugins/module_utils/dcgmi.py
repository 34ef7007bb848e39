"""Parser for the ``dcgmi diag -r N`` result table.

    +---------------------------+------------------------------------------------+
    | Diagnostic                | Result                                         |
    +===========================+================================================+
    |-----  Deployment  --------+------------------------------------------------|
    | Blacklist                 | Pass                                           |
    +-----  Hardware  ----------+------------------------------------------------+
    | GPU Memory                | Pass - All                                     |

Category rows name the group (Metadata, Deployment, Integration, Hardware, Stress). A result is
"Pass", "Fail", "Skip" or "Warn", optionally followed by " - <GPUs>"; DCGM 2.x+ continues a test on
rows with an empty name ("| | Fail - GPU: 2 |") and attaches "Warning"/"Info" rows to the test
above. Metadata rows (DCGM Version, Driver Version Detected, ...) carry no verdict and are kept
apart. Stdlib only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ansible.module_utils.verdicts import ParseError, ToolFailed


class DcgmiParseError(ParseError):
    pass


VERDICTS = {"pass": "Pass", "fail": "Fail", "skip": "Skip", "warn": "Warn"}


@dataclass
class DcgmTest:
    name: str
    category: str | None
    result: str  # Pass, Fail, Skip, Warn: the worst verdict over its rows
    details: list[str] = field(default_factory=list)  # "All", "GPU: 2", ...
    messages: list[str] = field(default_factory=list)  # Warning/Info rows


@dataclass(frozen=True)
class DcgmDiag:
    tests: tuple[DcgmTest, ...]
    metadata: dict[str, str]

    def by_name(self) -> dict[str, DcgmTest]:
        return {t.name: t for t in self.tests}

    @property
    def failed(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tests if t.result == "Fail")


_RANK = {"Fail": 3, "Warn": 2, "Pass": 1, "Skip": 0}
_CATEGORY = re.compile(r"^[|+]-+\s+(?P<name>[A-Za-z][A-Za-z ]*?)\s+-+\+")
_VERDICT = re.compile(r"^(?P<verdict>pass|fail|skip|warn)\w*(?:\s*-\s*(?P<detail>.*))?$", re.IGNORECASE)


def parse_dcgmi_diag(text: str, source: str = "dcgmi diag") -> DcgmDiag:
    tests: list[DcgmTest] = []
    metadata: dict[str, str] = {}
    category: str | None = None
    last: DcgmTest | None = None
    for number, raw in enumerate(text.replace("\r", "").splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("Error"):
            # dcgmi's own "Error: Unable to complete diagnostic ...": the diagnostic did not run.
            raise ToolFailed(f"dcgmi reported an error: {line[:300]}", source=source, line=number)
        if not line.startswith(("|", "+")) and "Unable to" in line:
            raise DcgmiParseError("not dcgmi diag output", source=source, line=number, text=line)
        if match := _CATEGORY.match(line):
            category, last = match["name"], None
            continue
        if not line.startswith("|"):
            continue  # borders and "Successfully ran diagnostic for group."
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) != 2:
            raise DcgmiParseError("expected two cells", source=source, line=number, text=line)
        name, value = cells
        if (name, value) == ("Diagnostic", "Result"):
            continue
        verdict = _VERDICT.match(value)
        if name in ("Warning", "Info") and last is not None:
            last.messages.append(f"{name}: {value}")
            if name == "Warning" and last.result == "Pass":
                last.result = "Warn"
        elif not name:
            if last is None:
                raise DcgmiParseError("continuation row without a test above", source=source, line=number, text=line)
            if verdict:  # per-GPU continuation row: "Fail - GPU: 2"
                new = VERDICTS[verdict["verdict"].lower()]
                last.result = max(last.result, new, key=_RANK.__getitem__)
                if verdict["detail"]:
                    last.details.append(verdict["detail"])
            elif last.messages:  # a long message wraps onto rows with an empty name
                last.messages[-1] += " " + value
            else:
                last.messages.append(value)
        elif verdict:
            last = DcgmTest(name, category, VERDICTS[verdict["verdict"].lower()])
            if verdict["detail"]:
                last.details.append(verdict["detail"])
            tests.append(last)
        else:
            metadata[name] = value
            last = None
    if not tests:
        raise DcgmiParseError("no test results in the table", source=source)
    return DcgmDiag(tuple(tests), metadata)
