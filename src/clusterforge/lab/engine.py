"""Connection to the Docker engine, with an error that says how to get one."""

from __future__ import annotations

import os

import docker
from docker.errors import DockerException

from clusterforge.errors import EnvironmentProblem


def connect() -> docker.DockerClient:
    """A client for a running Docker engine, or an error naming where it looked."""
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        client = docker.from_env()
        client.ping()
    except DockerException as exc:
        raise EnvironmentProblem(
            f"no Docker engine reachable at {where}: the lab needs one. "
            "Start it (`systemctl start docker`, or `dockerd &` as root) "
            f"or point DOCKER_HOST at it. ({exc.__class__.__name__})"
        ) from None
    return client
