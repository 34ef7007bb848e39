"""Controller cost of site.yml at fleet scale, on simulated hosts: clusterforge's ansible.cfg
against stock Ansible, and Mitogen against the default strategy, side by side in one run.

Each simulated host is this machine reached with the local connection, as a Python of its own
(a per-host symlink to this interpreter, so nothing is shared between hosts that would not be
on real nodes), in no group but `all`. Only the stages whose hosts are `all` run (preflight, base, monitoring,
validate): the others' roles probe systemd units and vendor repositories, which a controller
without systemd cannot answer (measure those on the lab: bench/idempotent_share.py).
Its facts come from bench/fleet_plugins/modules/fleet_facts.py: this machine's, with the few
preflight checks (systemd, Debian 12) set to a lab node's. site.yml runs in check mode without
become, so nothing on this machine changes; every stage runs, but the orchestrator stages only
on hosts in their groups (slurm by default: kubernetes stops at its gate).

Per setting, one warm-up run (it fills the fact cache the project's settings keep), then the
measured re-run: wall time, controller CPU of every process (ansible-playbook and everything
it started), the main process's own CPU (the serial part: the strategy, templating, results),
and peak memory as PSS summed over the process tree (sampled; RSS would count shared pages once
per fork). Per host-task, a host-task being one task's result on one host. Then, per stage,
the tasks each host ran (bench/fleet_plugins/callback/fleet_tasks.py) and a paper estimate for
10,000 nodes. Target: project settings' controller CPU per host-task <= 0.5x stock.

With --lab the same figures come from a lab of its own reached over SSH (brought up, converged
with site.yml, measured, removed): real re-runs of every stage, not check mode, so the gpu,
containers, storage, slurm and kubernetes stages count too, and controller CPU is the
controller's alone (the modules run in the nodes' containers, not in the measured process tree),
with SSH's costs (pipelining, ControlPersist) in it.

Settings: the project's ansible.cfg (its default configuration, as users run it); the same with
the opt-in accelerations on (project-accelerated: CLUSTERFORGE_ACCELERATE=1, jinja_code_cache); the
same without fork_warmup (what it saves); the same with the roles' config files
written by ansible.builtin.template and copy instead of the project's config_file action
(project-builtin-files: what config_file saves); stock Ansible (an empty config, and template and
copy for the config files, as a stock playbook writes them); the project's with Mitogen's strategy.

    python bench/fleet.py [--hosts 4] [--no-mitogen] [--repeat 1] [--json out.json]
    python bench/fleet.py --lab [--size small] [--no-mitogen] [--repeat 3] [--marginal] [--json out.json]

--marginal (with --lab) re-runs each setting on fewer nodes too (the head and the first compute
node): the difference is what each further host-task costs, with the per-run costs (reading the
playbooks, building each module once) cancelled out, as they are at 10,000 nodes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import psutil
import yaml

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
BIN = Path(sys.executable).parent
PLUGINS = HERE / "fleet_plugins"
TARGET_RATIO = 0.5
FLEET = 10_000
SAMPLE_S = 0.1
LAB = "cffleet"
# The project's settings without one of its callbacks: what each one saves.
WITHOUT_ONE_PLUGIN = {"project-no-warmup": "fork_warmup"}
# The project's opt-in accelerations, on (plugins/callback/accelerate.py).
ACCELERATED = {"CLUSTERFORGE_ACCELERATE": "1"}
# The roles write their config files with the project's config_file action (one round trip per
# file); the stock setting, and project-builtin-files, run those tasks as ansible.builtin.template
# and ansible.builtin.copy instead (bench/fleet_plugins/action_builtin), as a stock playbook does.
BUILTIN_FILES = {"ANSIBLE_ACTION_PLUGINS": str(PLUGINS / "action_builtin")}


def pss_of_tree(processes: Iterable[psutil.Process]) -> int:
    """Proportional set size summed over processes (bytes): a page shared by n processes counts 1/n
    in each, so forks sharing the controller's memory are not counted n times. Processes that end
    or cannot be read while being sampled are left out."""
    total = 0
    for process in processes:
        try:
            total += process.memory_full_info().pss
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return total


class PeakPss:
    """Samples the PSS of a process and its descendants in a thread; keeps the peak."""

    def __init__(self, pid: int, interval: float = SAMPLE_S):
        self.root = psutil.Process(pid)
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                tree = [self.root, *self.root.children(recursive=True)]
            except psutil.NoSuchProcess:
                return
            self.peak = max(self.peak, pss_of_tree(tree))
            self._stop.wait(self.interval)

    def __enter__(self) -> PeakPss:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


# The stage registry: where it is, and where it was before roles/clusterforge (for --before).
REGISTRIES = (
    (Path("roles/clusterforge/vars/main.yml"), "__clusterforge_stages"),
    (Path("playbooks/vars/stages.yml"), "clusterforge_stages"),
)


def stage_of_plays(project: Path) -> dict[str, str]:
    """Play name -> stage, from each stage's playbook (site.yml imports them in the registry's order)."""
    path, key = next((path, key) for path, key in REGISTRIES if (project / path).exists())
    mapping = {}
    for stage in yaml.safe_load((project / path).read_text())[key]:
        for play in yaml.safe_load((project / "playbooks" / f"{stage['name']}.yml").read_text()):
            if "hosts" in play:
                mapping[play["name"]] = stage["name"]
    return mapping


def per_stage(plays: list[dict], stages: dict[str, str]) -> dict[str, dict]:
    """The callback's plays summed by stage: host-tasks, per-host task counts (min and max over
    hosts), changed (would change, in check mode), wall and CPU seconds."""
    summed: dict[str, dict] = {}
    for play in plays:
        stage = stages.get(play["play"], play["play"])
        into = summed.setdefault(
            stage, {"tasks": {}, "changed": 0, "wall_s": 0.0, "main_cpu_s": 0.0, "children_cpu_s": 0.0}
        )
        for host, count in play["tasks"].items():
            into["tasks"][host] = into["tasks"].get(host, 0) + count
        into["changed"] += sum(play["changed"].values())
        for key in ("wall_s", "main_cpu_s", "children_cpu_s"):
            into[key] += play[key]
    for into in summed.values():
        counts = into.pop("tasks").values()
        into.update(
            host_tasks=sum(counts),
            hosts=len(counts),
            min_per_host=min(counts, default=0),
            max_per_host=max(counts, default=0),
        )
    return summed


def stage_cpu(stage: dict) -> float:
    return stage.get("main_cpu_s", 0.0) + stage.get("children_cpu_s", 0.0)


def write_inventory(workdir: Path, hosts: int) -> list[Path]:
    """`hosts` simulated nodes in no group but `all`, reached with the local connection, each with a
    Python of its own (a symlink to this one): one interpreter per host, as on real nodes."""
    nodes = {}
    for index in range(1, hosts + 1):
        link = workdir / "python" / f"node{index:05d}" / "python3"
        link.parent.mkdir(parents=True)
        link.symlink_to(sys.executable)
        nodes[link.parent.name] = {"ansible_python_interpreter": str(link)}
    connection = {"ansible_connection": "local", "ansible_become": False, "ansible_facts_modules": "fleet_facts"}
    inventory = workdir / "fleet.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": nodes, "vars": connection}}))
    return [inventory]


def environment(
    workdir: Path,
    config: Path,
    extra: dict[str, str],
    without: tuple[str, ...] = (),
    inventory: str = "yaml",
    project: Path = PROJECT,
) -> dict[str, str]:
    """Where the project's roles and plugins are (the same for every setting: paths, not tuning),
    the bench's fact module and callback, and the setting under test (its config's callbacks but
    those named in `without`)."""
    callbacks = ",".join(callbacks_enabled(config, without)) if config == PROJECT / "ansible.cfg" else "fleet_tasks"
    return {
        # A switch set in the caller's shell must not turn the default setting into another one.
        **{name: value for name, value in os.environ.items() if name not in ACCELERATED},
        "ANSIBLE_CONFIG": str(config),
        "ANSIBLE_ROLES_PATH": str(project / "roles"),
        "ANSIBLE_LIBRARY": f"{project / 'plugins/modules'}:{PLUGINS / 'modules'}",
        "ANSIBLE_ACTION_PLUGINS": str(project / "plugins/action"),
        "ANSIBLE_MODULE_UTILS": str(project / "plugins/module_utils"),
        "ANSIBLE_INVENTORY_PLUGINS": str(project / "plugins/inventory"),
        "ANSIBLE_FILTER_PLUGINS": str(project / "plugins/filter"),
        "ANSIBLE_DOC_FRAGMENT_PLUGINS": str(project / "plugins/doc_fragments"),
        "ANSIBLE_INVENTORY_ENABLED": inventory,
        "ANSIBLE_CALLBACK_PLUGINS": f"{project / 'plugins/callback'}:{PLUGINS / 'callback'}",
        "ANSIBLE_CALLBACKS_ENABLED": callbacks,
        "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(workdir / "facts"),
        "ANSIBLE_NOCOLOR": "1",
        **extra,
    }


def callbacks_enabled(config: Path, without: tuple[str, ...] = ()) -> list[str]:
    """The config's callbacks_enabled but those named in `without`, then the bench's fleet_tasks."""
    kept = [name.strip() for name in _cfg_value(config, "callbacks_enabled").split(",") if name.strip()]
    return [*(name for name in kept if name not in without), "fleet_tasks"]


def _cfg_value(config: Path, key: str) -> str:
    import configparser

    parser = configparser.ConfigParser(interpolation=None)
    parser.read(config)
    return parser.get("defaults", key, fallback="")


def run_site(
    workdir: Path,
    inventory: list[Path],
    env: dict[str, str],
    name: str,
    check: bool = True,
    idempotent: bool = True,
    limit: list[str] | None = None,
    project: Path = PROJECT,
) -> dict:
    """One `ansible-playbook site.yml` (`--check` unless told otherwise): wall, CPU of the whole tree
    and of the main process, peak PSS, and the callback's plays. A real re-run (idempotent) must
    change nothing."""
    plays_file = workdir / f"{name}.plays.json"
    command = [str(BIN / "ansible-playbook"), *(f"-i{path}" for path in inventory), "site.yml"]
    command += ["--check"] if check else []
    command += ["--limit", ",".join(limit)] if limit else []
    log = workdir / f"{name}.log"
    start = time.perf_counter()
    with log.open("w") as output:
        process = subprocess.Popen(
            command, cwd=project, env={**env, "FLEET_TASKS_OUT": str(plays_file)}, stdout=output, stderr=output
        )
        with PeakPss(process.pid) as memory:
            # Wait for the exit without reaping, to read the main process's own CPU time from its zombie.
            os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)
            main = psutil.Process(process.pid).cpu_times()
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if process.returncode != 0:
        raise SystemExit(f"site.yml failed ({name}, exit {process.returncode}, log {log}):\n{failure_lines(log)}")
    plays = json.loads(plays_file.read_text())["plays"]
    changed = {host for play in plays for host, count in play["changed"].items() if count}
    if not check and idempotent and changed:
        raise SystemExit(f"the re-run ({name}) changed something on {sorted(changed)}: not idempotent; see {log}")
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "main_cpu_s": main.user + main.system,
        "peak_pss_mib": memory.peak / 2**20,
        "host_tasks": sum(sum(play["tasks"].values()) for play in plays),
        "plays": plays,
    }


def failure_lines(log: Path, limit: int = 12) -> str:
    """What went wrong, from a run's log: its fatal and error lines (the per-task timing lines that
    end the log would hide them), else the log's end."""
    lines = log.read_text(errors="replace").splitlines()
    found = [line[:400] for line in lines if line.startswith(("fatal:", "ERROR", "[ERROR]")) or "FAILED!" in line]
    return "\n".join(found[:limit]) or "\n".join(lines[-limit:])


def least_cpu(kept: dict | None, measured: dict) -> dict:
    """Of two runs of one setting, the one with less controller CPU (the other paid for noise)."""
    return measured if kept is None or measured["cpu_s"] < kept["cpu_s"] else kept


def per_host_task(figures: dict) -> dict:
    tasks = figures["host_tasks"] or 1
    return {
        "wall_ms": 1000 * figures["wall_s"] / tasks,
        "cpu_ms": 1000 * figures["cpu_s"] / tasks,
        "main_cpu_ms": 1000 * figures["main_cpu_s"] / tasks,
        "pss_kib": figures["peak_pss_mib"] * 1024 / tasks,
    }


def fewer_nodes(hosts: Iterable[str]) -> list[str]:
    """The hosts of the --marginal bench's smaller run: the lab's all but its compute nodes
    (nodeNN) after the first."""
    compute = sorted(host for host in hosts if host.startswith("node"))
    if len(compute) < 2:
        raise SystemExit(f"--marginal needs a lab of 2 or more compute nodes, this one has {len(compute)}")
    return sorted(host for host in hosts if host not in compute[1:])


def marginal(few: dict, full: dict) -> dict:
    """What each further host-task costs: the difference between a run on all the lab's nodes
    and one on fewer, divided by the host-tasks it adds. The per-run costs both runs pay alike
    (reading the playbooks, building each module once, imports) cancel out: at 10,000 nodes they
    are noise, and the marginal cost is what grows with the fleet."""
    tasks = full["host_tasks"] - few["host_tasks"]
    if tasks <= 0:
        raise SystemExit(f"the run on fewer nodes ran {few['host_tasks']} host-tasks, all nodes {full['host_tasks']}")
    cpu, main = full["cpu_s"] - few["cpu_s"], full["main_cpu_s"] - few["main_cpu_s"]
    return {
        "host_tasks": tasks,
        "cpu_s": cpu,
        "main_cpu_s": main,
        "cpu_ms": 1000 * cpu / tasks,
        "main_cpu_ms": 1000 * main / tasks,
    }


def estimate(
    figures: dict, hosts: int, fleet: int = FLEET, slices: Iterable[int] = (1, 10, 40), per_task: dict | None = None
) -> list[str]:
    """Paper estimate for `fleet` nodes from measured per-host-task figures (the run's averages,
    or `per_task`, the marginal figures): CPU grows with host-tasks; the main process is one
    serial core, so it bounds the wall time, and N slices (N controllers, fleet/N nodes each)
    divide that serial share by N."""
    tasks_per_host = figures["host_tasks"] / hosts
    per_task = per_task or per_host_task(figures)
    host_tasks = tasks_per_host * fleet
    lines = [
        f"{fleet:,} nodes x {tasks_per_host:.0f} tasks = {host_tasks:,.0f} host-tasks: "
        f"controller CPU {host_tasks * per_task['cpu_ms'] / 3.6e6:.1f} core-hours, "
        f"main process {host_tasks * per_task['main_cpu_ms'] / 3.6e6:.2f} h serial"
    ]
    for n in slices:
        lines.append(
            f"  {n:>3} slice(s): main process >= {host_tasks * per_task['main_cpu_ms'] / 6e4 / n:6.1f} min each"
        )
    return lines


def print_verdicts(label: str, measure: str, cpu_ms: dict[str, float]) -> None:
    """Each setting's CPU per host-task against stock's, and whether it meets the target."""
    for name, value in cpu_ms.items():
        if name != "stock":
            ratio = value / cpu_ms["stock"]
            verdict = "met" if ratio <= TARGET_RATIO else "NOT met"
            print(f"{label} {name}/stock, {measure}: {ratio:.2f} (target <= {TARGET_RATIO}: {verdict})")


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    lines = [
        "  ".join(str(cell).rjust(width) for cell, width in zip(row, widths, strict=True)) for row in [header, *rows]
    ]
    return "\n".join(lines)


def checkout(ref: str, into: Path) -> Path:
    """The project as it was at `ref` (git archive): for --before."""
    into.mkdir()
    archive = subprocess.run(["git", "-C", str(PROJECT), "archive", ref], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def tasks_per_host(stage: dict | None) -> str:
    if not stage or not stage["hosts"]:
        return "0"
    low, high = stage["min_per_host"], stage["max_per_host"]
    return str(high) if low == high else f"{low}-{high}"


@contextlib.contextmanager
def lab_nodes(workdir: Path, size: str):
    """A lab of its own (SSH, the lab's default connection), removed afterwards: its inventory."""
    env = {**os.environ, "CLUSTERFORGE_STATE_DIR": str(workdir / "state")}

    def lab(*args: str) -> None:
        command = [sys.executable, "-m", "clusterforge.cli", "lab", *args, "--name", LAB]
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)

    lab("down")
    lab("up", "--size", size)
    try:
        yield [workdir / "state" / "labs" / LAB / "lab.topology.yml"]
    finally:
        lab("down")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=4, help="simulated nodes (default 4)")
    parser.add_argument("--lab", action="store_true", help="measure on a lab of its own over SSH instead")
    parser.add_argument("--size", default="small", help="with --lab: its size (default small)")
    parser.add_argument("--no-mitogen", action="store_true", help="leave Mitogen out")
    parser.add_argument("--repeat", type=int, default=1, help="measured runs per setting, in turn; least CPU kept")
    parser.add_argument(
        "--marginal",
        action="store_true",
        help="with --lab: also re-run on fewer nodes, for the cost each further host-task adds",
    )
    parser.add_argument(
        "--before",
        metavar="REF",
        help="with --lab: also re-run the site.yml of this git commit (stock settings) on the same lab, "
        "and print its tasks per host per stage beside the current ones",
    )
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if args.marginal and not args.lab:
        raise SystemExit("--marginal measures a lab: add --lab (and --size medium or larger for a clear difference)")
    if args.before and not args.lab:
        raise SystemExit("--before counts every stage's tasks on a lab: add --lab")
    if args.hosts < 1 or args.repeat < 1:
        raise SystemExit(f"--hosts {args.hosts} --repeat {args.repeat}: expected positive numbers")
    sys.path.insert(0, str(PROJECT / "src"))
    from clusterforge.runner import mitogen

    project = PROJECT / "ansible.cfg"
    settings = {
        "project": (project, {}, ()),
        "project-accelerated": (project, ACCELERATED, ()),
        **{setting: (project, {}, (plugin,)) for setting, plugin in WITHOUT_ONE_PLUGIN.items()},
        "project-builtin-files": (project, BUILTIN_FILES, ()),
        "stock": (None, BUILTIN_FILES, ()),
    }
    if not args.no_mitogen:
        settings["project+mitogen"] = (project, mitogen.environment(), ())
    plugins = "topology,yaml" if args.lab else "yaml"
    results, results_few, failures, few, before = {}, {}, {}, None, None
    with tempfile.TemporaryDirectory(prefix="fleet-") as tmp:
        workdir = Path(tmp)
        empty = workdir / "stock.cfg"
        empty.write_text("")
        nodes = (
            lab_nodes(workdir, args.size) if args.lab else contextlib.nullcontext(write_inventory(workdir, args.hosts))
        )
        with nodes as inventory:
            if args.lab:
                # Converged once with the project's settings: every setting then measures a re-run.
                env = environment(workdir, project, {}, inventory=plugins)
                converged = run_site(workdir, inventory, env, "converge", check=False, idempotent=False)
                if args.marginal:
                    few = fewer_nodes({host for play in converged["plays"] for host in play["tasks"]})
            # Settings in turn, round after round, so a noisy spell on the machine hits them alike.
            for turn in range(args.repeat):
                for name, (config, extra, without) in settings.items():
                    if name in failures:
                        continue
                    env = environment(workdir, config or empty, extra, without, plugins)
                    try:
                        if not args.lab and turn == 0:
                            run_site(workdir, inventory, env, f"{name}-warmup")
                        measured = run_site(workdir, inventory, env, name, check=not args.lab)
                        if few:
                            measured_few = run_site(workdir, inventory, env, f"{name}-few", check=False, limit=few)
                            results_few[name] = least_cpu(results_few.get(name), measured_few)
                    except SystemExit as failed:
                        if name != "project+mitogen":
                            raise
                        # Reported, not hidden: Mitogen's failure on this ansible-core is a finding.
                        failures[name] = str(failed)[-1500:]
                        continue
                    results[name] = least_cpu(results.get(name), measured)
                    print(f"measured {name} ({turn + 1} of {args.repeat})", file=sys.stderr)
            if args.before:
                # The commit's own playbooks and roles on the lab the current ones converged: a
                # re-run (not required to change nothing: the commit is not what converged the lab).
                old = checkout(args.before, workdir / "before")
                env = environment(workdir, empty, BUILTIN_FILES, inventory=plugins, project=old)
                try:
                    before_run = run_site(workdir, inventory, env, "before", check=False, idempotent=False, project=old)
                    # Read while the checkout exists (it goes with the temporary directory).
                    before = (per_stage(before_run["plays"], stage_of_plays(old)), before_run)
                except SystemExit as failed:
                    # Reported, not hidden, and the measured settings are still printed.
                    failures[f"before ({args.before})"] = str(failed)[-1500:]
    hosts = len({host for play in results["project"]["plays"] for host in play["tasks"]})
    stages = stage_of_plays(PROJECT)
    if args.lab:
        print(f"site.yml, idempotent re-run, lab of {hosts} nodes over SSH ({args.size}), forks as configured")
    else:
        print(f"site.yml --check, idempotent re-run, {hosts} simulated hosts (local connection), forks as configured")
    rows = []
    for name, figures in results.items():
        per_task = per_host_task(figures)
        rows.append(
            [
                name,
                figures["host_tasks"],
                f"{figures['wall_s']:.1f}",
                f"{figures['cpu_s']:.1f}",
                f"{figures['main_cpu_s']:.1f}",
                f"{figures['peak_pss_mib']:.0f}",
                f"{per_task['cpu_ms']:.1f}",
                f"{per_task['main_cpu_ms']:.1f}",
                f"{per_task['pss_kib']:.0f}",
            ]
        )
    print(
        table(
            rows,
            ["setting", "host-tasks", "wall s", "cpu s", "main s", "PSS MiB", "cpu ms/ht", "main ms/ht", "PSS KiB/ht"],
        )
    )
    print_verdicts("ratio", "controller CPU per host-task", {n: per_host_task(f)["cpu_ms"] for n, f in results.items()})
    for setting, plugin in WITHOUT_ONE_PLUGIN.items():
        saved = results["project"]["cpu_s"] / results[setting]["cpu_s"]
        print(f"ratio project/{setting}, controller CPU (what {plugin} saves): {saved:.2f}")
    saved = results["project"]["cpu_s"] / results["project-builtin-files"]["cpu_s"]
    print(f"ratio project/project-builtin-files, controller CPU (what config_file saves): {saved:.2f}")
    saved = results["project-accelerated"]["cpu_s"] / results["project"]["cpu_s"]
    print(f"ratio project-accelerated/project, controller CPU (what the opt-in accelerations save): {saved:.2f}")
    print("\nper stage (project settings): tasks each host ran, host-tasks, would-change, CPU")
    project_stages = per_stage(results["project"]["plays"], stages)
    stock_stages = per_stage(results["stock"]["plays"], stages)
    print(
        table(
            [
                [
                    stage,
                    f"{s['min_per_host']}-{s['max_per_host']}"
                    if s["min_per_host"] != s["max_per_host"]
                    else s["max_per_host"],
                    s["host_tasks"],
                    s["changed"],
                    f"{stage_cpu(s):.1f}",
                    f"{stage_cpu(stock_stages.get(stage, {})):.1f}",
                ]
                for stage, s in project_stages.items()
                if s["hosts"]  # stages whose plays matched no host (not measured on simulated hosts)
            ],
            ["stage", "tasks/host", "host-tasks", "changed", "cpu s", "stock cpu s"],
        )
    )
    if before:
        old_stages, before_run = before
        print(f"\ntasks per host per stage: before ({args.before}, stock settings) and after (this tree, stock)")
        print(
            table(
                [
                    [
                        stage,
                        tasks_per_host(old_stages.get(stage)),
                        tasks_per_host(stock_stages.get(stage)),
                        old_stages.get(stage, {}).get("host_tasks", 0),
                        stock_stages.get(stage, {}).get("host_tasks", 0),
                    ]
                    for stage in dict.fromkeys([*old_stages, *stock_stages])
                ]
                + [["all", "", "", before_run["host_tasks"], results["stock"]["host_tasks"]]],
                ["stage", "tasks/host before", "tasks/host after", "host-tasks before", "host-tasks after"],
            )
        )
        changed = sum(stage["changed"] for stage in old_stages.values())
        print(f"(the before re-run changed {changed} host-tasks; cpu {before_run['cpu_s']:.1f} s)")
    for name, message in failures.items():
        print(f"\n{name} FAILED (not measured):\n{message}")
    margins = {name: marginal(results_few[name], results[name]) for name in results_few}
    if margins:
        print(f"\nmarginal cost: all {hosts} nodes against {', '.join(few)} (per-run costs cancel out)")
        stock_margin = margins["stock"]["cpu_ms"]
        print(
            table(
                [
                    [
                        name,
                        m["host_tasks"],
                        f"{m['cpu_s']:.1f}",
                        f"{m['cpu_ms']:.1f}",
                        f"{m['main_cpu_ms']:.1f}",
                        f"{m['cpu_ms'] / stock_margin:.2f}",
                    ]
                    for name, m in margins.items()
                ],
                ["setting", "added host-tasks", "added cpu s", "cpu ms/ht", "main ms/ht", "ratio to stock"],
            )
        )
        print_verdicts("marginal ratio", "CPU per added host-task", {n: m["cpu_ms"] for n, m in margins.items()})
    print("\npaper estimate from the project settings' " + ("marginal figures:" if margins else "figures:"))
    print("\n".join(estimate(results["project"], hosts, per_task=margins.get("project"))))
    if args.json:
        figures = {name: {k: v for k, v in f.items() if k != "plays"} for name, f in results.items()}
        Path(args.json).write_text(
            json.dumps(
                {
                    "hosts": hosts,
                    "lab": args.lab,
                    "settings": figures,
                    "marginal": margins,
                    "stages": project_stages,
                    "stages_before": before[0] if before else None,
                },
                indent=2,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
