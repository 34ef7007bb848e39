# Copyright: clusterforge contributors
# Apache License 2.0
"""What every node check module (gpu_check, ib_check, nccl_check, ...) documents alike."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
author:
  - clusterforge contributors
attributes:
  check_mode:
    description: Checks only read the node, so they run unchanged in check mode.
    support: full
  diff_mode:
    description: Nothing is changed, so there is nothing to diff.
    support: none
"""
