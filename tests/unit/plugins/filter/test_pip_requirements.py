"""clusterforge_pip_requirements and clusterforge_pip_install_problem: the pytorch role's hash-pinned
requirements file, and the reason it gives when pip fails, over pip's own captured outputs."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from tests.paths import filters as filters_of

FILTERS = filters_of("plugins/filter/pip_requirements.py")
requirements = FILTERS["clusterforge_pip_requirements"]
problem = FILTERS["clusterforge_pip_install_problem"]
SIX = "4721f391ed90541fddacab5acf947aa0d3dc7d27b2e1e8eda2be8970586c3274"
TORCH = "8e0dd929cf1f69b2718390154b630c505d010e9ad676b8c87d521aa54fe5ad73"
INDEX = "http://127.0.0.1:18931/simple/"
# pip's own outputs, captured by clusterforge against a local index (each .source says how); not
# node-check outputs, so not under tests/fixtures.
OUTPUTS = Path(__file__).parent / "pip_install"


def _output(case: str) -> str:
    return (OUTPUTS / f"{case}.txt").read_text()


def test_the_file_pins_every_package_to_a_version_and_its_digests():
    text = requirements(
        [
            {"name": "torch", "version": "2.6.0+standin", "sha256": TORCH},
            {"name": "six", "version": "1.17.0", "sha256": [SIX, TORCH]},
        ],
        "pytorch_pip_requirements",
        "Ansible managed",
    )
    assert text == (
        "# Ansible managed\n"
        f"torch==2.6.0+standin --hash=sha256:{TORCH}\n"
        f"six==1.17.0 --hash=sha256:{SIX} --hash=sha256:{TORCH}\n"
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([], "pytorch_pip_requirements: expected a non-empty list of {name, version, sha256}"),
        ("torch==2.6.0", "pytorch_pip_requirements: expected a non-empty list"),
        (["torch"], "pytorch_pip_requirements, entry 1: expected a mapping of name, version, sha256"),
        ([{"name": "torch; rm", "version": "1", "sha256": SIX}], "entry 1: name is 'torch; rm'"),
        ([{"name": "torch", "version": ">=2", "sha256": SIX}], "entry 1 (torch): version is '>=2', expected an exact"),
        ([{"name": "torch", "version": "2.6.0", "sha256": "abc"}], "entry 1 (torch): sha256 is 'abc', expected 64"),
        ([{"name": "torch", "version": "2.6.0", "sha256": SIX}, {"name": "six", "version": "1.17.0"}], "entry 2 (six)"),
    ],
)
def test_a_malformed_list_is_refused_naming_the_variable_and_the_entry(value, message):
    with pytest.raises(AnsibleFilterError) as raised:
        requirements(value, "pytorch_pip_requirements")
    assert message in str(raised.value)


def test_a_hash_mismatch_names_the_package_both_digests_and_the_variable():
    assert problem(_output("hash_mismatch"), "pytorch_pip_requirements", "pytorch_pip_index_url", INDEX) == (
        "six==1.17.0 from http://127.0.0.1:18931/simple/six/six-1.17.0-py2.py3-none-any.whl does not match its"
        " sha256 in pytorch_pip_requirements: expected"
        f" 0000f391ed90541fddacab5acf947aa0d3dc7d27b2e1e8eda2be8970586c3274, got {SIX}"
    )


@pytest.mark.parametrize(
    ("case", "url", "reason"),
    [
        ("connection_refused", "http://127.0.0.1:18932/simple/", "NewConnectionError"),
        ("untrusted_http_host", "http://no-such-host.invalid/simple/", "is not a trusted or secure host"),
    ],
)
def test_an_unreachable_index_names_the_package_and_the_index_variable(case, url, reason):
    found = problem(_output(case), "pytorch_pip_requirements", "pytorch_pip_index_url", url)
    assert found.startswith(
        f"torch==2.6.0+standin: the index pytorch_pip_index_url ({url}) cannot be reached ({reason});"
    )


def test_a_version_the_index_lacks_names_the_package_what_is_there_and_both_variables():
    assert problem(_output("no_such_version"), "pytorch_pip_requirements", "pytorch_pip_index_url", INDEX) == (
        f"torch==2.7.0+standin: the index pytorch_pip_index_url ({INDEX}) has no such wheel for this node"
        " (versions there: 2.5.1+standin, 2.6.0+standin); change pytorch_pip_requirements or the index"
    )


def test_a_dependency_missing_from_the_list_is_named():
    assert problem(_output("unpinned_dependency"), "pytorch_pip_requirements", "pytorch_pip_index_url", INDEX) == (
        "six==1.17.0: needed but not in pytorch_pip_requirements (every package of the dependency closure needs"
        " its version and sha256 there)"
    )


def test_an_unknown_failure_keeps_pip_s_last_error():
    output = "Collecting x\nERROR: first\nERROR: Could not install packages due to an OSError: disk full\n"
    assert problem(output, "v", "i", INDEX) == (
        f"pip failed installing v from i ({INDEX}): ERROR: Could not install packages due to an OSError: disk full"
    )
