"""The README's quick start, as a new user follows it.

Its quoted output is what the commands print: the commands that need no lab run here, in a fresh
clone of the repository, and each quoted line must come out in the quoted order; the lab's quoted
lines are held to the code that prints them. After the quick start the linters of the README's test
command still pass in that clone: the quick start writes only where every linter looks away.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import PROJECT

README = PROJECT / "README.md"
# A quoted block: the marker, then a ```console block of "$ command" and the lines it prints.
BLOCK = re.compile(r"<!-- quickstart: (no-lab|lab) -->\n\s*```console\n(.*?)\n\s*```", re.DOTALL)
PLACEHOLDER = re.compile(r"<[^<>]*>")
# What prints each lab command's lines (the setup script's log() puts "lab-host-setup: " first).
LAB_PRINTERS = {
    "bash .ci/lab-host-setup.sh": [".ci/lab-host-setup.sh"],
    "clusterforge lab up": [
        "src/clusterforge/cli/lab.py",
        "src/clusterforge/lab/cluster.py",
        "src/clusterforge/lab/image.py",
    ],
    "clusterforge run": ["src/clusterforge/cli/run.py"],
    "clusterforge report --latest": ["src/clusterforge/cli/check.py"],
    "clusterforge lab down": ["src/clusterforge/cli/lab.py"],
}


def quoted(kind: str) -> list[tuple[str, list[str]]]:
    """(command, quoted output lines) of each block of that kind, in the README's order."""
    blocks = []
    for found_kind, body in BLOCK.findall(README.read_text()):
        if found_kind != kind:
            continue
        lines = [line.strip() for line in body.splitlines()]
        assert lines[0].startswith("$ "), f"README quick-start block does not start with a command: {lines[0]!r}"
        assert not any(line.startswith("$ ") for line in lines[1:]), "one command per quoted block"
        blocks.append((lines[0][2:], lines[1:]))
    return blocks


def matches_in_order(expected: list[str], printed: list[str]) -> str | None:
    """None when each expected line matches a printed line after the previous one's, else the first
    that does not. `...` alone skips any lines; `...` inside a line stands for any text (a table's
    borders, a cut cell); a line without `...` must be printed exactly (trailing blanks aside)."""
    position = 0
    for line in expected:
        if line == "...":
            continue
        pattern = re.compile("^" + ".*".join(re.escape(part) for part in line.split("...")) + "$")
        for index in range(position, len(printed)):
            if pattern.match(printed[index].rstrip()):
                position = index + 1
                break
        else:
            return line
    return None


def test_the_readme_quotes_each_command_needing_no_lab_and_every_lab_step():
    no_lab = [command for command, _ in quoted("no-lab")]
    assert [c.split()[:3] for c in no_lab] == [
        ["clusterforge", "topology", "validate"],
        ["clusterforge", "topology", "show"],
        ["clusterforge", "topology", "render"],
        ["clusterforge", "topology", "draw"],
        ["clusterforge", "check", "judge"],
    ]
    assert [command for command, _ in quoted("lab")] == list(LAB_PRINTERS)


def test_the_matcher_refuses_lines_out_of_order_or_changed():
    printed = ["a table", "ok: 3 hosts", "3 files written to x"]
    assert matches_in_order(["ok: 3 hosts", "...", "3 files written to x"], printed) is None
    assert matches_in_order(["3 files written to x", "ok: 3 hosts"], printed) == "ok: 3 hosts"
    assert matches_in_order(["ok: 4 hosts"], printed) == "ok: 4 hosts"
    assert matches_in_order(["...table"], printed) is None


@pytest.mark.parametrize(("command", "lines"), quoted("lab"), ids=lambda value: str(value)[:40])
def test_each_quoted_lab_line_is_printed_by_the_code_named_for_it(command, lines):
    sources = "\n".join((PROJECT / path).read_text() for path in LAB_PRINTERS[command])
    for line in lines:
        if line == "...":
            continue
        text = line.removeprefix("lab-host-setup: ") if command.startswith("bash .ci/") else line
        fragments = [part.strip() for part in PLACEHOLDER.split(text) if part.strip()]
        assert fragments, f"quoted line {line!r} says nothing the code could print"
        for fragment in fragments:
            assert fragment in sources, f"README quotes {line!r} for `{command}`: {fragment!r} is printed nowhere"


@pytest.fixture(scope="module")
def fresh_clone(tmp_path_factory):
    """A `git clone` of the repository (its committed state, as a new user gets it)."""
    if not (PROJECT / ".git").exists():
        pytest.skip("skipped: the project is not a git checkout, so there is nothing to clone")
    clone = tmp_path_factory.mktemp("quickstart") / "clusterforge"
    subprocess.run(["git", "clone", "--quiet", str(PROJECT), str(clone)], check=True)
    return clone


def run_in(clone: Path, command: str) -> subprocess.CompletedProcess:
    argv = command.split()
    # The installed CLI, from this virtualenv (the README puts .venv/bin on PATH).
    argv[0] = shutil.which(argv[0], path=str(Path(sys.executable).parent)) or argv[0]
    return subprocess.run(argv, cwd=clone, capture_output=True, text=True, timeout=300)


def test_the_quick_start_prints_what_the_readme_quotes_and_leaves_the_linters_passing(fresh_clone):
    for command, lines in quoted("no-lab"):
        result = run_in(fresh_clone, command)
        assert result.returncode == 0, f"`{command}` exited {result.returncode}: {result.stderr}"
        missing = matches_in_order(lines, result.stdout.splitlines())
        assert missing is None, f"README quotes {missing!r} for `{command}`; it printed:\n{result.stdout}"
    assert (fresh_clone / ".clusterforge" / "examples" / "inventory" / "hosts.yml").is_file()
    bin_dir = Path(sys.executable).parent
    # The linters of the README's test command (tests/run_all.sh), as it runs them.
    linters = (
        ["ruff", "check", "."],
        ["ruff", "format", "--check", "."],
        ["yamllint", "--strict", "."],
        ["ansible-lint"],
    )
    for linter in linters:
        result = subprocess.run(
            [str(bin_dir / linter[0]), *linter[1:]], cwd=fresh_clone, capture_output=True, text=True, timeout=900
        )
        assert result.returncode == 0, (
            f"{' '.join(linter)} fails after the quick start:\n{result.stdout}{result.stderr}"
        )


def test_files_written_in_a_new_directory_of_the_checkout_would_break_the_test_command(fresh_clone, tmp_path):
    """The reason the quick start writes under .clusterforge/: yamllint lints any other directory
    (the `topology render -o out/` a new user first tried)."""
    out = fresh_clone / "out-probe"
    result = run_in(
        fresh_clone, "clusterforge topology render inventories/examples/h100-superpod.topology.yml -o out-probe"
    )
    assert result.returncode == 0, result.stderr
    try:
        linted = subprocess.run(
            [str(Path(sys.executable).parent / "yamllint"), "--strict", "out-probe"],
            cwd=fresh_clone,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert linted.returncode != 0, "yamllint passed rendered files: the quick start's reason is gone"
    finally:
        shutil.rmtree(out)
