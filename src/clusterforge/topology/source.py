"""Read a topology YAML file keeping the line of every key, so errors can name it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

Location = tuple[str | int, ...]


class TopologyError(Exception):
    """A topology file is wrong: names the file, the line where known, the field, what was expected."""

    def __init__(self, path: Path | str, problems: list[tuple[Location, int | None, str]]):
        self.path = Path(path)
        self.problems = problems
        super().__init__(self.render())

    def render(self) -> str:
        return "\n".join(describe(self.path, *problem) for problem in self.problems)


def describe(path: Path | str, location: Location, line: int | None, message: str) -> str:
    """`file:line: field: message`, the form of every problem and warning about a topology file."""
    where = f"{path}:{line}" if line else str(path)
    field = ".".join(str(part) for part in location) or "(top level)"
    return f"{where}: {field}: {message}"


def load_yaml(path: Path) -> tuple[Any, dict[Location, int]]:
    """The document and a map from each key's path to its 1-based line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TopologyError(path, [((), None, f"cannot read the file: {exc.strerror}")]) from None
    except UnicodeDecodeError as exc:
        raise TopologyError(path, [((), None, f"not UTF-8 text: {exc.reason} at byte {exc.start}")]) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        lines: dict[Location, int] = {}
        if node is not None:
            _collect_lines(node, lines)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise TopologyError(path, [((), line, f"not valid YAML: {problem}")]) from None
    except (ValueError, TypeError, OverflowError) as exc:
        # PyYAML's constructors raise these for values such as 2001-02-30 or !!int abc.
        raise TopologyError(path, [((), None, f"not valid YAML: {exc}")]) from None
    return data, lines


# A topology file has a few thousand values; aliases that expand past this are refused
# (a self-referencing or "billion laughs" document) before anything walks them.
MAX_VALUES = 200_000
MAX_DEPTH = 64


def _collect_lines(root: yaml.Node, lines: dict[Location, int]) -> None:
    stack: list[tuple[yaml.Node, Location]] = [(root, ())]
    visited = 0
    while stack:
        node, location = stack.pop()
        visited += 1
        if visited > MAX_VALUES:
            raise yaml.YAMLError(f"the document expands to more than {MAX_VALUES} values (nested aliases)")
        if len(location) > MAX_DEPTH:
            raise yaml.YAMLError(f"the document nests deeper than {MAX_DEPTH} levels (a self-referencing alias?)")
        lines.setdefault(location, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                child = (*location, key.value)
                lines[child] = key.start_mark.line + 1
                stack.append((value, child))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, (*location, index)) for index, item in enumerate(node.value))


def line_of(lines: dict[Location, int], location: Location) -> int | None:
    """The line of the deepest part of `location` that the file has."""
    for end in range(len(location), -1, -1):
        line = lines.get(tuple(location[:end]))
        if line is not None:
            return line
    return None
