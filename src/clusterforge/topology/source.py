"""Read a topology YAML file keeping the line of every key, so errors can name it."""

from __future__ import annotations

import unicodedata
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
    """`file:line: field: message`, the form of every problem and warning about a topology file.
    The path and keys are not validated text: escaped, they cannot add lines to the report."""
    where = printable(f"{path}:{line}" if line else str(path))
    field = printable(".".join(str(part) for part in location)) or "(top level)"
    return f"{where}: {field}: {message}"


def printable(text: str) -> str:
    """`text` with every non-printable character (newline, CR, escape, NUL, U+2028...) written
    as a Python escape, so that text from outside cannot start a line or a terminal sequence."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else ascii(char)[1:-1] for char in text)


# A topology describes node types and counts, not hosts: the largest example is 3 KB. A file
# past 1 MiB is a mistake (a generated host list, the wrong file) and would take minutes to parse.
MAX_BYTES = 1024 * 1024
# A topology file has a few thousand values; aliases that expand past this are refused
# (a self-referencing or "billion laughs" document) before anything walks them.
MAX_VALUES = 200_000
# The schema nests 5 levels, ansible.vars a few more. PyYAML's composer recurses per level.
MAX_DEPTH = 64
# libyaml parses a 1 MiB file in a second, where PyYAML's own parser takes half a minute.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(path: Path) -> tuple[Any, dict[Location, int]]:
    """The document and a map from each key's path to its 1-based line."""
    text = _read(path)
    try:
        _check_depth(path, text)  # before the composer, which would exhaust Python's stack
        loader = _LOADER(text)
        try:
            node = loader.get_single_node()
            lines: dict[Location, int] = {}
            if node is not None:
                _collect_lines(path, node, lines)
            data = None if node is None else loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise TopologyError(path, [((), line, f"not valid YAML: {problem}")]) from None
    except (ValueError, TypeError, OverflowError) as exc:
        # PyYAML's constructors raise these for values such as 2001-02-30 or !!int abc.
        raise TopologyError(path, [((), None, f"not valid YAML: {exc}")]) from None
    return data, lines


def _read(path: Path) -> str:
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_BYTES + 1)  # read no more than that: a device or a pipe may never end
    except OSError as exc:
        raise TopologyError(path, [((), None, f"cannot read the file: {exc.strerror or exc}")]) from None
    if len(raw) > MAX_BYTES:
        raise TopologyError(path, [((), None, f"larger than {MAX_BYTES} bytes; expected a topology file (a few KB)")])
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TopologyError(path, [((), None, f"not UTF-8 text: {exc.reason} at byte {exc.start}")]) from None


def _check_depth(path: Path, text: str) -> None:
    # PyYAML's parser is iterative: its events give the depth without recursing.
    depth = 0
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                line = event.start_mark.line + 1
                raise TopologyError(path, [((), line, f"nests deeper than {MAX_DEPTH} levels")])
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _collect_lines(path: Path, root: yaml.Node, lines: dict[Location, int]) -> None:
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
            seen: dict[tuple[str, str], int] = {}
            for key, value in node.value:
                line = key.start_mark.line + 1
                if not isinstance(key, yaml.ScalarNode):
                    raise TopologyError(path, [(location, line, "a key must be a plain value, not a list or mapping")])
                first = seen.get((key.tag, key.value))
                if first is not None:
                    # YAML leaves duplicate keys undefined and PyYAML keeps the last: refused, as
                    # Ansible warns about them, so that no value is dropped unseen.
                    message = f"key repeated (first on line {first}); expected each key once per mapping"
                    raise TopologyError(path, [((*location, key.value), line, message)])
                seen[key.tag, key.value] = line
                child = (*location, key.value)
                lines[child] = line
                stack.append((value, child))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, (*location, index)) for index, item in enumerate(node.value))


def control_characters(data: Any, free_text: Location) -> list[tuple[Location, str]]:
    """Every key and string value holding a control character (newline, CR, tab, escape,
    U+2028...): rendered into topology.conf, the inventory or an NCCL env file it would start
    a line of its own. Values under `free_text` (ansible.vars) may span lines: they only reach
    YAML output, which quotes them."""
    problems: list[tuple[Location, str]] = []
    stack: list[tuple[Any, Location]] = [(data, ())]
    while stack:
        value, location = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str) and _control_character(key):
                    problems.append(((*location, key), _control_message(key, "key")))
                stack.append((item, (*location, key)))
        elif isinstance(value, list):
            stack.extend((item, (*location, index)) for index, item in enumerate(value))
        elif isinstance(value, (str, bytes)) and location[: len(free_text)] != free_text:
            # !!binary gives bytes, which pydantic would decode into a str field.
            text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
            if _control_character(text):
                problems.append((location, _control_message(text, "value")))
    return sorted(problems, key=lambda problem: [str(part) for part in problem[0]])


_LINE_AND_CONTROL = ("Cc", "Zl", "Zp")  # C0, DEL, C1 (NEL), line and paragraph separators


def _control_character(text: str) -> str | None:
    if text.isprintable():  # the common case, in C
        return None
    return next((char for char in text if unicodedata.category(char) in _LINE_AND_CONTROL), None)


def _control_message(text: str, what: str) -> str:
    char = _control_character(text)
    return f"{what} '{printable(text)}' holds the control character U+{ord(char):04X}; expected printable text"


def line_of(lines: dict[Location, int], location: Location) -> int | None:
    """The line of the deepest part of `location` that the file has."""
    for end in range(len(location), -1, -1):
        line = lines.get(tuple(location[:end]))
        if line is not None:
            return line
    return None
