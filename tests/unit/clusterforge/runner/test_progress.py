"""Progress fed synthetic ansible-runner events: plain lines for a CI log, the live panel."""

from __future__ import annotations

import io

from rich.console import Console

from clusterforge.runner import present, progress
from clusterforge.runner.record import RunRecorder
from tests.unit.clusterforge.runner.events import BUS_IDS, DETAILS, play, site_events, start, task


def plain_output(events, show_changes=False) -> list[str]:
    stream = io.StringIO()
    with progress.PlainProgress(RunRecorder(), stream, show_changes=show_changes) as plain:
        for item in events:
            plain(item)
    return stream.getvalue().splitlines()


def strip_clock(lines: list[str]) -> list[str]:
    return [line[8:] if line.startswith("[") else line for line in lines]


def test_plain_mode_prints_each_tasks_results_and_what_the_play_says():
    lines = strip_clock(plain_output(site_events()))
    assert lines[:4] == [
        "PLAY Set the nodes up",
        "TASK Report what could not be applied",
        # The task's result, once it is over: no "(hosts 3, failed 0, unreachable 0)" at its start.
        lines[2],
        "  node01, node02: skipped: live apply of vm.swappiness: a container cannot set host-wide keys",
    ]
    assert lines[2].startswith("  ok 2, changed 0, failed 0, skipped 0 (") and lines[2].endswith(" s)")
    assert not any("(hosts " in line for line in lines)
    assert any(
        line.startswith("  ok 1, changed 0, failed 0, skipped 0 (") and "failed checks so far 1" in line
        for line in lines
    )
    failed = next(line for line in lines if line.startswith("  FAILED"))
    # The host once, the 8 GPUs' identical notes once.
    assert failed == (
        "  FAILED node01: Fail hosts whose checks failed: gpu_check: 1 of 12 checks failed: "
        f"gpu.throttle: 8/8 GPUs: clocks held down by hw_power_brake_slowdown {DETAILS}"
    )
    assert "  node02: failed (ignored): node02: not fatal" in lines


def test_plain_mode_lists_changes_with_their_diff_when_asked():
    lines = strip_clock(plain_output(site_events(), show_changes=True))
    at = lines.index("  changed node01: Write the configuration [x]")
    assert lines[at + 1 : at + 6] == [
        "            --- /etc/x.conf",
        "            +++ /etc/x.conf",
        "            @@ -1 +1 @@",
        "            -a = 1",
        "            +a = 2",
    ]
    assert not any("changed node02" in line for line in plain_output(site_events(), show_changes=True))
    assert not any("changed node01" in line for line in plain_output(site_events()))


def test_multi_line_messages_are_indented_and_escape_sequences_dropped():
    from tests.unit.clusterforge.runner.events import ok

    lines = plain_output([play("p"), task("t"), ok("h", "t", "ansible.builtin.debug", msg="one\x1b[31m\ntwo")])
    assert lines[-2:] == [lines[-2], "          two"]
    assert lines[-2].endswith("  h: one")


def test_a_cancelled_run_still_says_what_the_running_task_said():
    from tests.unit.clusterforge.runner.events import ok

    lines = plain_output([play("p"), task("t"), ok("h", "t", "ansible.builtin.debug", msg="said before the end")])
    assert lines[-1].endswith("h: said before the end")


def panel_lines(recorder: RunRecorder, width: int = 80) -> list[str]:
    console = Console(file=io.StringIO(), width=width, force_terminal=False, color_system=None)
    console.print(progress.render_panel(recorder))
    return console.file.getvalue().splitlines()


def test_the_panel_shows_task_n_of_n_hosts_done_counts_and_failed_checks():
    recorder = RunRecorder()
    recorder.expected_tasks = 10
    long_task = "Render the very long task name that used to wrap onto four lines at eighty columns " * 2
    events = site_events()
    for item in events[:-1]:  # all but the recap: task 5 starts next
        recorder(item)
    recorder(task(long_task))
    recorder(start("node01", long_task))
    recorder(start("node02", long_task))
    check = next(e for e in events if e["event_data"].get("task_action") == "gpu_check")
    recorder(check)  # node01's GPU check again, now within the long task
    lines = panel_lines(recorder)
    assert len(lines) == 3 and all(len(line) <= 80 for line in lines)  # one line each, never wrapped
    assert "hosts 2" in lines[0] and "ok 6" in lines[0] and "changed 1" in lines[0]
    assert "failed checks 2" in lines[0]
    assert lines[1].startswith("play Check every node")
    assert lines[2].startswith("task 5/10  00:00  hosts done 1/2  Render the very long")
    assert lines[2].endswith("…")


def test_the_panel_is_drawn_anew_on_each_refresh_so_the_clocks_move(monkeypatch):
    recorder = RunRecorder()
    recorder(play("p"))
    recorder(task("a long task"))
    console = Console(file=io.StringIO(), width=100, force_terminal=True)
    live = progress.LiveProgress(recorder, console)
    assert live.live.auto_refresh and live.live.transient  # redrawn on a timer, cleared at the end
    first = panel_text(live)
    recorder.started -= 75
    recorder.current.started -= 65
    later = panel_text(live)
    assert first.startswith("00:00  hosts") and later.startswith("01:15  hosts")
    assert "01:05  hosts done 0/0  a long task" in later


def panel_text(live: progress.LiveProgress) -> str:
    console = Console(file=io.StringIO(), width=100, color_system=None)
    console.print(live.live.renderable)
    return console.file.getvalue()


def test_live_mode_prints_messages_above_the_panel_and_clears_it():
    stream = io.StringIO()
    console = Console(file=stream, width=100, force_terminal=True, color_system=None)
    with progress.LiveProgress(RunRecorder(), console, show_changes=True) as live:
        for item in site_events():
            live(item)
    out = stream.getvalue()
    assert "node01, node02: skipped: live apply of vm.swappiness" in out
    assert "FAILED node01: Fail hosts whose checks failed: gpu_check" in out
    assert "changed node01: Write the configuration [x]" in out and "+a = 2" in out
    assert "[/" not in out


def test_choose_plain_off_a_terminal_and_quiet_for_json():
    recorder = RunRecorder()
    assert type(progress.choose(recorder, Console(file=io.StringIO()), json_output=True)) is progress.QuietProgress
    assert isinstance(progress.choose(recorder, Console(file=io.StringIO()), json_output=False), progress.PlainProgress)
    terminal = Console(file=io.StringIO(), force_terminal=True)
    assert isinstance(progress.choose(recorder, terminal, json_output=False), progress.LiveProgress)


def test_gpu_repeats_merge_with_or_without_a_total():
    notes = "; ".join(f"{bus}: hot" for bus in BUS_IDS[:3])
    assert present.merge_gpus(f"gpu.temp: {notes}", gpus=8) == "gpu.temp: 3/8 GPUs: hot"
    assert present.merge_gpus(f"gpu.temp: {notes}") == "gpu.temp: 3 GPUs: hot"
    mixed = f"{BUS_IDS[0]}: hot; {BUS_IDS[1]}: cold; {BUS_IDS[2]}: cold"
    assert present.merge_gpus(mixed, 8) == f"{BUS_IDS[0]}: hot; 2/8 GPUs: cold"
    assert present.merge_gpus("no bus ids; here") == "no bus ids; here"


def test_failure_text_drops_the_host_said_again():
    assert present.failure_text("node01", "node01: it broke") == "it broke"
    assert present.failure_text("node01", "node02: it broke") == "node02: it broke"


def test_home_is_written_as_a_tilde(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert present.home(tmp_path / "runs" / "x") == "~/runs/x"
    assert present.home("/elsewhere/x") == "/elsewhere/x"
    assert present.home(str(tmp_path) + "other") == str(tmp_path) + "other"


def test_an_unreachable_host_is_said_once():
    from tests.unit.clusterforge.runner.events import event

    unreachable = event("runner_on_unreachable", host="ghost", task="t", res={"msg": "ssh: connection refused"})
    lines = strip_clock(plain_output([play("p"), task("t"), unreachable, task("u"), event("playbook_on_stats")]))
    assert lines.count("  UNREACHABLE ghost: ssh: connection refused") == 1
    assert "  ok 0, changed 0, failed 0, skipped 0, unreachable 1 (" in "\n".join(lines)
