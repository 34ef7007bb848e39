"""Bad input gets one clear line and a documented exit code, never a traceback."""

from __future__ import annotations

import pytest

from clusterforge import cli, errors


def run_cli(capsys, *argv):
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_run_with_a_missing_inventory(capsys, state_dir, tmp_path):
    code, output = run_cli(capsys, "run", "-i", str(tmp_path / "nope.yml"))
    assert code == errors.EXIT_USAGE
    assert "inventory not found" in output and "nope.yml" in output
    assert "Traceback" not in output


def test_run_without_inventory_and_without_a_lab(capsys, state_dir):
    code, output = run_cli(capsys, "run")
    assert code == errors.EXIT_USAGE
    assert "clusterforge lab up" in output


def test_bad_extra_var(capsys, state_dir, project):
    code, output = run_cli(capsys, "run", "-i", str(project / "site.yml"), "-e", "novalue")
    assert code == errors.EXIT_USAGE
    assert "expected KEY=VALUE" in output


def test_unknown_lab_size_is_refused_before_docker(capsys, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    code, output = run_cli(capsys, "lab", "up", "--size", "huge")
    assert code == errors.EXIT_USAGE
    assert "unknown lab size 'huge'" in output


@pytest.mark.parametrize("command", [["lab", "up"], ["lab", "status"], ["lab", "down"]])
def test_lab_without_a_docker_engine(capsys, monkeypatch, command):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    code, output = run_cli(capsys, *command)
    assert code == errors.EXIT_ENVIRONMENT
    assert "no Docker engine reachable at unix:///nonexistent/docker.sock" in output


def test_argparse_errors_use_the_usage_exit_code(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["lab", "up", "--builder", "kaniko"])
    assert exit_info.value.code == errors.EXIT_USAGE
