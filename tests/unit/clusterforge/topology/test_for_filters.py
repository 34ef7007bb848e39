"""The topology loader the filter plugins share (clusterforge.topology.for_filters)."""

from __future__ import annotations

import os
import shutil

import pytest
from ansible.errors import AnsibleFilterError

from clusterforge.topology.for_filters import topology_for_filter
from tests.paths import PROJECT

LAB = PROJECT / "inventories" / "lab" / "lab.topology.yml"


def test_one_load_per_file_version(tmp_path):
    copy = tmp_path / "lab.topology.yml"
    shutil.copy(LAB, copy)
    first = topology_for_filter("f", copy)
    assert topology_for_filter("g", copy) is first  # every host of a play shares one load
    os.utime(copy, (1, 1))  # the file changed: loaded again
    assert topology_for_filter("f", copy) is not first


def test_a_missing_file_names_the_filter_and_the_file(tmp_path):
    expected = r"^my_filter: cannot read the topology file '.*nope.yml': No such file"
    with pytest.raises(AnsibleFilterError, match=expected):
        topology_for_filter("my_filter", tmp_path / "nope.yml")


def test_a_bad_topology_names_the_filter_the_file_and_the_field(tmp_path):
    bad = tmp_path / "bad.topology.yml"
    bad.write_text("plugin: topology\ncluster: 3\n")
    with pytest.raises(AnsibleFilterError, match=r"^my_filter: .*bad.topology.yml:2: cluster: "):
        topology_for_filter("my_filter", bad)
