"""clusterforge: provision GPU training clusters with Ansible."""

__version__ = "0.1.0"
