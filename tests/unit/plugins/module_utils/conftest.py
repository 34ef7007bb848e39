"""Tests of plugins/module_utils: parsers and judges over real captured outputs.

Importing samples first puts plugins/module_utils into the ``ansible.module_utils`` namespace, as
Ansible does when it packs a module, before any test module imports from there.
"""

from __future__ import annotations

from . import samples  # noqa: F401 (imported for its side effect)
