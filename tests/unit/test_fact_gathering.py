"""Every play that gathers facts gathers the one subset in roles/clusterforge/vars/main.yml: what
the roles read, never the controller's or a node's environment (facts are cached on disk)."""

from __future__ import annotations

import pytest
import yaml

from tests.paths import PROJECT

ROLE_VARS = PROJECT / "roles" / "clusterforge" / "vars" / "main.yml"
SUBSET = yaml.safe_load(ROLE_VARS.read_text())["__clusterforge_gather_subset"]
PLAYS = [
    (path.name, play)
    for path in sorted((PROJECT / "playbooks").glob("*.yml"))
    for play in yaml.safe_load(path.read_text()) or []
    if isinstance(play, dict) and "hosts" in play and play.get("gather_facts", True)
]


def test_the_gathering_plays_are_found():
    assert {"base.yml", "gpu.yml", "preflight.yml", "slurm.yml", "storage.yml"} <= {name for name, _ in PLAYS}


def test_the_subset_leaves_out_everything_not_named():
    assert SUBSET[:2] == ["!all", "!min"]  # min holds env, user, ssh_pub_keys, python
    assert not {"env", "all", "min", "ssh_pub_keys", "user"} & set(SUBSET)


@pytest.mark.parametrize(("playbook", "play"), PLAYS, ids=[f"{name}:{play['name']}" for name, play in PLAYS])
def test_every_gathering_play_gathers_the_subset(playbook, play):
    # module_defaults reach the play's own gathering (ansible-lint's schema takes no template
    # for the gather_subset keyword); a role's setup task names its own subset.
    setup = (play.get("module_defaults") or {}).get("ansible.builtin.setup") or {}
    assert setup.get("gather_subset") == "{{ __clusterforge_gather_subset }}", playbook
    # The variable comes from roles/clusterforge's vars, which a play sees only when it lists the role.
    roles = [role if isinstance(role, str) else role.get("role") for role in play.get("roles", [])]
    assert "clusterforge" in roles, playbook
