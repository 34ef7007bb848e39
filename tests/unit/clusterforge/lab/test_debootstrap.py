"""debootstrap's steps, read as the lab image builds: over a real run's output (fixture), and
through a stand-in debootstrap that proves each step is shown as it comes, not at the end."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path

import pytest
from rich.console import Console
from rich.progress import Progress

from clusterforge.cli import lab as lab_cli
from clusterforge.lab import debootstrap, image

REAL = Path(__file__).parent / "fixtures" / "trixie-minbase-debian-installer.txt"


def _steps(lines) -> list[debootstrap.Step]:
    reader = debootstrap.Reader()
    return [step for step in map(reader.feed, lines) if step is not None]


@pytest.fixture(scope="module")
def real_steps():
    return _steps(REAL.read_text().splitlines(keepends=True))


def test_a_real_run_gives_each_stage_in_order_once(real_steps):
    lines = []
    log = debootstrap.StageLog(lines.append)
    for step in real_steps:
        log(step)
    stages = [line.removeprefix("debootstrap: ") for line in lines]
    wanted = [
        "Downloading Packages files",
        "Downloading packages",
        "Extracting packages",
        "Installing core packages...",
        "Unpacking required packages...",
        "Configuring required packages...",
        "Unpacking the base system...",
        "Configuring the base system...",
        "Base system installed successfully.",
    ]
    assert [stage for stage in stages if stage in wanted] == wanted
    assert "Valid Release signature (key id 41587F7DB8C774BCCF131416762F67A0B2C39DE4)" in stages
    # Per-package messages stay out of a plain log: a line per stage, not per package.
    assert len(lines) == len(set(lines)) < 30
    assert not {"Retrieving apt 3.0.4", "Extracting apt...", "Unpacking tzdata...", "Configuring tzdata..."} & set(
        stages
    )


def test_progress_carries_its_total_and_reaches_it(real_steps):
    extract = [step for step in real_steps if step.kind == "P" and step.name == "EXTRACTPKGS"]
    assert (
        extract[0].end
        == extract[-1].end
        == len([step for step in real_steps if step.kind == "I" and step.name == "EXTRACTING"])
    )
    assert extract[-1].now == extract[-1].end
    downloads = [step for step in real_steps if step.name == "DOWNDEBS"]
    # The bare `P: now end` lines of a download advance the stage they belong to. (debootstrap
    # names the stage once more at 0 when it is done: the bar keeps the most it reached.)
    assert len({step.now for step in downloads}) > 100 and max(step.now for step in downloads) == downloads[-1].end


def test_messages_are_formatted_with_their_arguments(real_steps):
    texts = [step.text for step in real_steps if step.name == "RETRIEVING"]
    # `Retrieving %s %s` with a file and an empty version, then with a package and its version.
    assert texts[:4] == [
        "Retrieving InRelease",
        "Retrieving Packages",
        "Retrieving apt 3.0.4",
        "Retrieving base-files 13.8+deb13u8",
    ]


def test_a_failure_keeps_the_log_tail_and_the_error():
    steps = _steps(["log line 1\n", "E: COULDNTDL\n", "EA: libc6\n", "EF: Couldn't download package %s\n"])
    assert steps == [debootstrap.Step("E", "COULDNTDL", "Couldn't download package libc6")]


def _stand_in(tmp_path, script: str):
    folder = tmp_path / "bin"
    folder.mkdir()
    fake = folder / "debootstrap"
    fake.write_text("#!/bin/sh\n" + script)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    return folder


def test_steps_reach_the_caller_while_debootstrap_runs(tmp_path, monkeypatch):
    """The stand-in waits, after its first step, for a file that only the caller's handling of that
    step creates: the build can only finish if steps are read as they come."""
    flag = tmp_path / "seen"
    folder = _stand_in(
        tmp_path,
        f"""echo 'P: 0 2 DOWNDEBS' >&3; echo 'PF: Downloading packages' >&3
i=0; while [ ! -e {flag} ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
[ -e {flag} ] || exit 9
echo 'dpkg: a log line'
echo 'P: 2 2 DOWNDEBS' >&3; echo 'PF: Downloading packages' >&3
""",
    )
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    seen = []

    def on_step(step):
        seen.append(step)
        flag.touch()

    returncode, tail = image.run_debootstrap(["debootstrap", "trixie", "/nowhere"], on_step)
    assert returncode == 0
    assert [(s.now, s.end) for s in seen] == [(0, 2), (2, 2)]
    assert tail == "dpkg: a log line"


def test_a_failing_debootstrap_returns_its_status_and_what_it_said(tmp_path, monkeypatch):
    folder = _stand_in(
        tmp_path, "echo 'gpgv: no signature'; printf '%s\\n' 'E: X' 'EA: main' 'EF: no %s' >&3; exit 1\n"
    )
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    returncode, tail = image.run_debootstrap(["debootstrap"], lambda step: None)
    assert returncode == 1
    assert tail.splitlines() == ["gpgv: no signature", "E: no main"]


def test_on_a_terminal_each_stage_is_a_bar_that_fills(real_steps):
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100, color_system=None)
    with Progress(*lab_cli._bar_columns(), console=console) as progress:
        bars = lab_cli._BarSteps(progress)
        for step in real_steps:
            bars(step)
        tasks = {task.description.split(":")[0]: task for task in progress.tasks}
    assert tasks["Extracting packages"].completed == tasks["Extracting packages"].total == 78
    assert tasks["Downloading packages"].finished
    text = out.getvalue()
    assert "debootstrap: Base system installed successfully." in text and "100%" in text


def test_the_debootstrap_build_logs_each_stage_then_imports_the_tree(tmp_path, monkeypatch):
    """The build as `clusterforge lab image` runs it off a terminal, with a stand-in debootstrap that
    replays the real run's steps and lays out the directories the build writes into."""
    replay = tmp_path / "steps.txt"
    replay.write_text(REAL.read_text())
    folder = _stand_in(
        tmp_path,
        f"""eval "tree=\\${{$(($# - 1))}}"  # the arguments end with the tree, then the mirror
mkdir -p "$tree/etc/systemd/system" "$tree/etc/ssh" "$tree/var/lib/apt/lists" "$tree/var/cache/apt/archives"
echo "$@" > {tmp_path}/arguments
cat {replay} >&3
""",
    )
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(image.os, "geteuid", lambda: 0)

    class Api:
        def import_image(self, **kwargs):
            self.imported = kwargs

    class Client:
        api = Api()

    lines = []
    image._build_with_debootstrap(
        Client(), "trixie", "clusterforge/lab-node:trixie", "d1", "http://m", lines.append, None
    )
    assert (tmp_path / "arguments").read_text().startswith("--debian-installer --variant=minbase --include=")
    assert "debootstrap: Downloading packages" in lines and "debootstrap: Base system installed successfully." in lines
    assert lines[-1] == "packing rootfs and importing it as clusterforge/lab-node:trixie"
    assert Client.api.imported["repository"] == "clusterforge/lab-node" and Client.api.imported["tag"] == "trixie"
