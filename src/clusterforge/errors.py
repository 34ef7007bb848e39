"""Errors that the CLI turns into one clear line and a documented exit code."""

# Exit codes a CI job can act on (documented in docs/runner-and-reports.md, held to it by a test).
EXIT_OK = 0
EXIT_HOSTS_FAILED = 2
EXIT_HOSTS_UNREACHABLE = 3
EXIT_USAGE = 4
EXIT_ENVIRONMENT = 5
EXIT_INTERRUPTED = 130


class ClusterforgeError(Exception):
    """A user-facing error: the message says what is wrong and what was expected."""

    exit_code = EXIT_USAGE


class UsageError(ClusterforgeError):
    """Bad arguments or input files."""

    exit_code = EXIT_USAGE


class EnvironmentProblem(ClusterforgeError):
    """Something the machine lacks: a Docker engine, debootstrap, root rights."""

    exit_code = EXIT_ENVIRONMENT


class Interrupted(ClusterforgeError):
    """Ctrl-C or SIGTERM before anything ran (while the inventory was listed)."""

    exit_code = EXIT_INTERRUPTED
