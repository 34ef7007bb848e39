# Copyright: clusterforge contributors
# Apache License 2.0
"""Filter of the validation playbook: one CliqueId and ClusterUUID per NVLink domain.

The logic is in clusterforge.validation.fabric_domains (a pure function with unit tests); this is
a thin adapter that gathers each tray's fabric_check result and domain from hostvars.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

DOCUMENTATION = r"""
name: clusterforge_validation_fabric_domains
short_description: Hold every tray of an NVLink domain to the identity most of its trays report
description:
  - "For the hosts given that have a domain (C(clusterforge_nvlink_domain)) and a registered
    fabric_check result (C(__validate_fabric)), the domain's expected CliqueId and ClusterUUID is
    the one most of its trays report; each tray is judged against it by the fabric judge's domain
    check. Returns C({host: result}), each result with status, checks (one,
    C(nvlink_domain.<domain>)), counts, source, domain and expected."
positional: _input, hostvars
options:
  _input:
    description: The hosts to judge (ansible_play_hosts).
    type: list
    elements: str
    required: true
  hostvars:
    description: Ansible's hostvars.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Hold the trays of each NVLink domain to one identity
  ansible.builtin.set_fact:
    __validate_fabric_domains: "{{ ansible_play_hosts | clusterforge_validation_fabric_domains(hostvars) }}"
  run_once: true
"""

RETURN = r"""
_value:
  description: "{host: {status, checks, counts, source, domain, expected}} for each tray judged."
  type: dict
"""


def fabric_domains(hosts, hostvars):
    try:
        from clusterforge.validation.fabric_domains import domain_results
    except ImportError as exc:
        raise AnsibleFilterError(
            f"clusterforge_validation_fabric_domains needs the clusterforge package: {exc}"
        ) from None
    trays = []
    for host in hosts or ():
        variables = hostvars[host]
        domain = variables.get("clusterforge_nvlink_domain")
        registered = variables.get("__validate_fabric")
        # A tray whose fabric_check did not run (the condition, an unreachable host) has no verdict to hold.
        if domain is None or not isinstance(registered, dict) or "status" not in registered:
            continue
        trays.append(
            {
                "host": str(host),
                "domain": str(domain),
                "status": registered["status"],
                "identity": registered.get("identity"),
                "gpus": registered.get("gpus") or [],
                "source": registered.get("source"),
            }
        )
    return domain_results(trays)


class FilterModule:
    def filters(self):
        return {"clusterforge_validation_fabric_domains": fabric_domains}
