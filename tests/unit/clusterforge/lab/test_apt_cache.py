"""A lab node's apt picks the package cache on the machine hosting it when one answers, and goes
to Debian directly when none does: apt-proxy-detect, run as apt runs it, against real sockets.

The stand-in cache answers /acng-report.html with the page title a real apt-cacher-ng 3.7.4
serves there (captured from the CI host's cache); the rest of its page is not read."""

from __future__ import annotations

import http.server
import socket
import subprocess
import threading
import time
from contextlib import contextmanager

import pytest

from clusterforge.lab import apt_cache, spec

SCRIPT = spec.APT_DIR / spec.APT_DETECT
REPORT_TITLE = b"<title>Apt-Cacher NG Command And Control Page</title>"  # replayed from apt-cacher-ng 3.7.4


def _handler(body: bytes):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/acng-report.html" else 404)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    return Handler


@contextmanager
def _server(body: bytes):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(body))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _detect(uri: str, port: int) -> str:
    environment = {"PATH": "/usr/bin:/bin", "CLUSTERFORGE_LAB_APT_CACHE_HOST": "127.0.0.1"}
    environment["CLUSTERFORGE_LAB_APT_CACHE_PORT"] = str(port)
    result = subprocess.run([str(SCRIPT), uri], env=environment, capture_output=True, text=True, timeout=10, check=True)
    return result.stdout.strip()


def test_an_answering_cache_is_the_proxy():
    with _server(b"<html><head>" + REPORT_TITLE + b"</head></html>") as port:
        assert _detect("http://deb.debian.org/debian/dists/trixie/InRelease", port) == f"http://127.0.0.1:{port}"
        assert apt_cache.proxy_for("127.0.0.1", port) == f"http://127.0.0.1:{port}"


def test_no_cache_listening_means_debian_directly():
    port = _free_port()
    assert _detect("http://deb.debian.org/debian/dists/trixie/InRelease", port) == "DIRECT"
    assert apt_cache.proxy_for("127.0.0.1", port) is None


def test_another_web_server_on_the_port_is_not_taken_for_a_cache():
    with _server(b"<html><title>It works!</title></html>") as port:
        assert _detect("http://deb.debian.org/debian/", port) == "DIRECT"


def test_a_listener_that_never_answers_costs_apt_at_most_the_timeout():
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        started = time.monotonic()
        assert _detect("http://deb.debian.org/debian/", silent.getsockname()[1]) == "DIRECT"
        assert time.monotonic() - started < 5


@pytest.mark.parametrize(
    "uri",
    ["http://127.0.0.1:8080/docker/linux/debian/dists/trixie/InRelease", "http://localhost/x", "http://[::1]:8080/x"],
)
def test_local_repositories_are_always_fetched_directly(uri):
    with _server(REPORT_TITLE) as port:
        assert _detect(uri, port) == "DIRECT"


@pytest.mark.parametrize(
    ("attrs", "expected"),
    [
        ({"IPAM": {"Config": [{"Subnet": "172.18.0.0/16", "Gateway": "172.18.0.1"}]}}, "172.18.0.1"),
        ({"IPAM": {"Config": [{"Subnet": "172.17.0.0/16"}]}}, None),
        ({"IPAM": None}, None),
    ],
)
def test_the_gateway_is_read_from_the_network(attrs, expected):
    assert apt_cache.gateway(attrs) == expected


def test_lab_up_says_which_way_packages_come():
    network = {"IPAM": {"Config": [{"Gateway": "127.0.0.1"}]}}
    with _server(REPORT_TITLE) as port:
        assert apt_cache.describe(network, port).endswith(
            f"through the package cache on this machine (http://127.0.0.1:{port})"
        )
    port = _free_port()
    assert apt_cache.describe(network, port).startswith(
        f"apt: no package cache answers on this machine (127.0.0.1:{port})"
    )


# Lines of a real apt-cacher-ng 3.7.4 transfer log (the CI host's cache; addresses as they were):
# an upstream error, then one index fetched in from upstream and sent out to the client.
REAL_LOG = """\
1796507230|E|628|127.0.0.1|debrep/dists/trixie/InRelease [HTTP error, code: 503]
1796507274|I|140632|127.0.0.1|debrep/dists/trixie/InRelease
1796507274|O|140636|127.0.0.1|debrep/dists/trixie/InRelease
"""


def test_the_transfer_log_gives_bytes_fetched_from_upstream_and_served():
    assert apt_cache.transfers(REAL_LOG) == {"fetched": 140632, "served": 140636, "errors": 1}
    assert apt_cache.transfers("") == {"fetched": 0, "served": 0, "errors": 0}


def test_a_line_that_is_not_the_transfer_log_names_its_number():
    with pytest.raises(ValueError, match=r"apt-cacher.log line 2: expected time\|kind\|bytes\|client\|path"):
        apt_cache.transfers(REAL_LOG.splitlines()[0] + "\nnot a log line\n")
