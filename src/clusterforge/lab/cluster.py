"""Bring a lab up, show it, take it down; write the inventory that reaches its nodes."""

from __future__ import annotations

import contextlib
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import docker
import yaml
from docker.errors import APIError, NotFound

from clusterforge import topology
from clusterforge.errors import EnvironmentProblem, UsageError
from clusterforge.lab import access, apt_cache, facts, spec
from clusterforge.lab.image import ensure_image
from clusterforge.paths import project_dir, state_dir
from clusterforge.topology.source import printable

LABEL_LAB = "org.clusterforge.lab"
LABEL_HOST = "org.clusterforge.lab.host"
LABEL_GROUP = "org.clusterforge.lab.group"
# The checkout whose `lab up` made the node: another checkout's `up` refuses to take it over.
LABEL_CHECKOUT = "org.clusterforge.lab.checkout"
BOOT_TIMEOUT_S = 90


@dataclass(frozen=True)
class NodeStatus:
    host: str
    group: str
    container: str
    state: str
    systemd: str
    image: str
    address: str


def lab_dir(lab_name: str) -> Path:
    """The lab's state: its inventory, host_vars, SSH key pair and known_hosts."""
    return state_dir() / "labs" / lab_name


def inventory_path(lab_name: str) -> Path:
    """The lab's topology file, which is also its inventory (topology inventory plugin)."""
    return lab_dir(lab_name) / "lab.topology.yml"


def host_vars_dir(lab_name: str) -> Path:
    """Next to the inventory, so Ansible reads it with it: each SSH node's address."""
    return lab_dir(lab_name) / "host_vars"


def prepare(
    source: Path, size: str | None, lab_name: str, connection: str = spec.DEFAULT_CONNECTION
) -> list[spec.LabHost]:
    """Write the lab's sized topology into the state directory and return its hosts.
    A topology that does not validate is reported and nothing is written."""
    spec.check_connection(connection)
    spec.check_lab_name(lab_name)
    connection_vars = access.connection_vars(lab_dir(lab_name)) if connection == "ssh" else None
    document = spec.sized_topology(source, size, lab_name, connection_vars)
    target = inventory_path(lab_name)
    target.parent.mkdir(parents=True, exist_ok=True)
    candidate = target.with_name(".candidate.topology.yml")
    # printable(): a newline in the source's path would end the comment and add YAML of its own.
    header = f"# Written by `clusterforge lab up` from {printable(str(source))}; rewritten on every run.\n"
    candidate.write_text(header + yaml.safe_dump(document, sort_keys=False))
    try:
        plan = topology.load(candidate)
    except topology.TopologyError as exc:
        candidate.unlink()
        raise UsageError(f"the lab topology is not valid:\n{exc}") from None
    hosts = spec.lab_hosts(plan, lab_name)
    candidate.replace(target)
    return hosts


def up(
    client: docker.DockerClient,
    source: Path,
    size: str | None = spec.DEFAULT_SIZE,
    release: str = spec.DEFAULT_RELEASE,
    lab_name: str = "lab",
    builder: str = "auto",
    mirror: str | None = None,
    connection: str = spec.DEFAULT_CONNECTION,
    log=print,
    on_step=None,
    checkout: str | None = None,
) -> Path:
    """Start (or resize) the lab described by the topology `source` and return the path of
    its inventory. Idempotent. on_step: as ensure_image's (debootstrap's steps while it builds).
    checkout: the checkout bringing it up; a lab another checkout brought up is refused."""
    spec.check_release(release)
    if checkout is not None:
        _refuse_other_checkout(client, lab_name, checkout)
    hosts = prepare(source, size, lab_name, connection)
    tag = ensure_image(client, release, builder=builder, mirror=mirror, log=log, on_step=on_step)
    network = _ensure_network(client, lab_name)
    _ensure_shared_volume(client, lab_name)
    log(apt_cache.describe(network.attrs))
    wanted = {host.container for host in hosts}
    for container in _containers(client, lab_name):
        stale_image = container.image.tags and tag not in container.image.tags
        if container.name not in wanted or stale_image or not _has_shared_mount(container):
            log(f"removing {container.name}")
            container.remove(force=True)
    for host in hosts:
        _ensure_container(client, host, tag, network, lab_name, log, checkout)
    for host in hosts:
        _wait_for_systemd(client.containers.get(host.container))
    if connection == "ssh":
        _open_ssh(client, hosts, lab_name, log)
    else:
        _forget_ssh_nodes(lab_name)
    _forget_cached_facts([host.name for host in hosts], log)
    return inventory_path(lab_name)


def _refuse_other_checkout(client: docker.DockerClient, lab_name: str, checkout: str) -> None:
    """Two checkouts sharing a lab rewrite each other's inventory and nodes mid-run: refuse,
    naming the checkout that owns the lab's nodes."""
    others = {c.labels.get(LABEL_CHECKOUT) for c in _containers(client, lab_name)} - {checkout, None}
    if others:
        raise UsageError(
            f"lab {lab_name!r} is up from another checkout: {', '.join(sorted(others))}. "
            f"Take it down (`clusterforge lab down --name {lab_name}`) or give this checkout "
            "a lab of its own with --name"
        )


def _forget_cached_facts(host_names: list[str], log) -> None:
    """Drop the facts ansible-playbook cached under the lab's host names, at every `up` and `down`:
    they may describe a node since removed or recreated (its address, above all), and gathering
    them again costs the next run a few seconds."""
    try:
        directory = facts.fact_cache_dir(project_dir())
    except UsageError:
        return  # no project here, so no ansible.cfg saying where facts are cached
    removed = facts.forget(host_names, directory)
    if removed:
        log(f"forgot the cached facts of {', '.join(removed)} in {directory}")


def _open_ssh(client: docker.DockerClient, hosts: list[spec.LabHost], lab_name: str, log) -> None:
    """Let Ansible in over SSH: the admin user and key on every node, the nodes' host keys in the
    lab's known_hosts, and each node's address on the lab network in its host_vars."""
    _forget_ssh_nodes(lab_name)  # nodes removed since the last up leave no address behind
    public_key = access.ensure_key_pair(lab_dir(lab_name))
    keys = {}
    folder = host_vars_dir(lab_name)
    folder.mkdir()
    for host in hosts:
        container = client.containers.get(host.container)
        access.authorize(container, public_key)
        address = _address(container, spec.network_name(lab_name))
        keys[address] = access.host_key(container)
        variables = {
            "ansible_host": address,
            # Prometheus keeps scraping by container name (Docker's DNS on the lab network): an
            # address may change when a node is recreated, its name does not.
            "clusterforge_monitoring_address": host.container,
        }
        header = "# Written by `clusterforge lab up` (SSH connection); rewritten on every run.\n"
        (folder / f"{host.name}.yml").write_text(header + yaml.safe_dump(variables, sort_keys=False))
    access.write_known_hosts(lab_dir(lab_name), keys)
    log(f"SSH: {access.ADMIN_USER}@<node> with {access.key_path(lab_dir(lab_name))}, sudo for root")


def _forget_ssh_nodes(lab_name: str) -> None:
    """Drop the last up's node addresses and host keys (the key pair stays for the next up)."""
    shutil.rmtree(host_vars_dir(lab_name), ignore_errors=True)
    access.known_hosts_path(lab_dir(lab_name)).unlink(missing_ok=True)


def _address(container, network: str) -> str:
    container.reload()
    address = container.attrs["NetworkSettings"]["Networks"].get(network, {}).get("IPAddress")
    if not address:
        raise EnvironmentProblem(f"{container.name} has no address on the network {network}")
    return address


def down(client: docker.DockerClient, lab_name: str = "lab", log=print) -> int:
    """Remove the lab's containers, network and inventory; return how many nodes went."""
    spec.check_lab_name(lab_name)
    containers = _containers(client, lab_name)
    for container in containers:
        log(f"removing {container.name}")
        container.remove(force=True)
    _forget_cached_facts([c.labels[LABEL_HOST] for c in containers if c.labels.get(LABEL_HOST)], log)
    with contextlib.suppress(NotFound):
        client.networks.get(spec.network_name(lab_name)).remove()
    with contextlib.suppress(NotFound):
        client.volumes.get(spec.shared_volume_name(lab_name)).remove(force=True)
    inventory_path(lab_name).unlink(missing_ok=True)
    _forget_ssh_nodes(lab_name)
    return len(containers)


def status(client: docker.DockerClient, lab_name: str = "lab") -> list[NodeStatus]:
    spec.check_lab_name(lab_name)
    nodes = []
    for container in _containers(client, lab_name):
        labels = container.labels
        networks = container.attrs["NetworkSettings"]["Networks"]
        address = next((net.get("IPAddress") for net in networks.values()), "") or "-"
        nodes.append(
            NodeStatus(
                host=labels.get(LABEL_HOST, "?"),
                group=labels.get(LABEL_GROUP, "?"),
                container=container.name,
                state=container.status,
                systemd=_systemd_state(container) if container.status == "running" else "-",
                image=(container.image.tags or [container.image.short_id])[0],
                address=address,
            )
        )
    return sorted(nodes, key=lambda node: (node.group != "head", node.host))


def _containers(client: docker.DockerClient, lab_name: str):
    return client.containers.list(all=True, filters={"label": f"{LABEL_LAB}={lab_name}"})


def _ensure_network(client: docker.DockerClient, lab_name: str):
    name = spec.network_name(lab_name)
    try:
        return client.networks.get(name)
    except NotFound:
        return client.networks.create(name, driver="bridge", labels={LABEL_LAB: lab_name})


def _ensure_shared_volume(client: docker.DockerClient, lab_name: str):
    name = spec.shared_volume_name(lab_name)
    try:
        return client.volumes.get(name)
    except NotFound:
        return client.volumes.create(name=name, labels={LABEL_LAB: lab_name})


def _has_shared_mount(container) -> bool:
    """Whether the container mounts the lab's shared volume (one made by an older release does not)."""
    return any(mount.get("Destination") == spec.SHARED_MOUNT for mount in container.attrs.get("Mounts") or [])


def _ensure_container(client, host: spec.LabHost, tag: str, network, lab_name: str, log, checkout=None) -> None:
    try:
        container = client.containers.get(host.container)
    except NotFound:
        container = None
    if container is not None:
        if container.status != "running":
            log(f"starting {host.container}")
            container.start()
        return
    log(f"creating {host.container} ({host.group})")
    try:
        client.containers.run(
            tag,
            name=host.container,
            hostname=host.name,
            detach=True,
            network=network.name,
            labels={
                LABEL_LAB: lab_name,
                LABEL_HOST: host.name,
                LABEL_GROUP: host.group,
                **({LABEL_CHECKOUT: checkout} if checkout else {}),
            },
            **spec.docker_run_options(lab_name),
        )
    except APIError as exc:
        raise EnvironmentProblem(f"starting {host.container} failed: {exc.explanation}") from None


def _systemd_state(container) -> str:
    result = container.exec_run(["systemctl", "is-system-running"])
    return result.output.decode(errors="replace").strip() or "unknown"


def _wait_for_systemd(container) -> None:
    """Wait until systemd has finished booting (running, or degraded with a failed unit)."""
    deadline = time.monotonic() + BOOT_TIMEOUT_S
    state = "unknown"
    while time.monotonic() < deadline:
        container.reload()
        if container.status != "running":
            logs = container.logs(tail=20).decode(errors="replace")
            raise EnvironmentProblem(f"{container.name} stopped while booting:\n{logs}")
        state = _systemd_state(container)
        if state in ("running", "degraded"):
            return
        time.sleep(1)
    raise EnvironmentProblem(f"{container.name}: systemd did not finish booting in {BOOT_TIMEOUT_S}s (state {state})")
