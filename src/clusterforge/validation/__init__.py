"""Bring-up validation on the controller: which nodes run NCCL together (pairs), the node
checks' parsers and judges for local files (judges), and reports of a validation run (report).
The checks themselves run on the nodes (plugins/modules/*_check.py)."""
