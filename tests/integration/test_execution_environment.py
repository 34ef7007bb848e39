"""execution-environment.yml is a valid ansible-builder v3 definition that installs clusterforge."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.paths import PROJECT

BIN = Path(sys.executable).parent


def test_ansible_builder_creates_the_build_context(tmp_path):
    context = tmp_path / "context"
    done = subprocess.run(
        [
            str(BIN / "ansible-builder"),
            "create",
            "-f",
            "execution-environment.yml",
            "-c",
            str(context),
            "--output-filename",
            "Containerfile",
        ],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    containerfile = (context / "Containerfile").read_text()
    final_stage = containerfile.split("FROM base as final", 1)[1]
    assert "pip3 install --no-deps /tmp/clusterforge-src" in final_stage
    # ansible.cfg's callbacks (fork_warmup) stay found under AWX's runner, which appends its own.
    assert "ENV ANSIBLE_CALLBACK_PLUGINS=/runner/project/plugins/callback" in final_stage
    build = context / "_build"
    assert (build / "clusterforge" / "pyproject.toml").is_file()
    assert (build / "clusterforge" / "src" / "clusterforge" / "topology" / "__init__.py").is_file()
    requirements = (build / "requirements.txt").read_text()
    assert "pydantic==2.14.4" in requirements and "python-hostlist==2.3.0" in requirements
    collections = (build / "requirements.yml").read_text()
    assert "ansible.posix" in collections and "community.docker" in collections
