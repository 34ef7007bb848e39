#!/usr/bin/env bash
# Make this machine able to host the lab and run the tests: a running Docker engine, debootstrap
# for building the node image where no container registry answers, an SSH client (the lab's
# default connection), Debian's chromium for the test that opens the validation report in a real
# (headless) browser, and a package cache (apt-cacher-ng) that the lab nodes and Molecule
# instances fetch Debian packages through, so a package is downloaded once per CI host, not once
# per scenario (src/clusterforge/lab/apt: a node without it answering goes to Debian directly).
# Does nothing where all are already there; needs root only to install or start them.
set -euo pipefail

log() { printf 'lab-host-setup: %s\n' "$*"; }

if ! docker info >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then
    log "no Docker engine is running and this is not root: start Docker (systemctl start docker) and re-run"
    exit 1
  fi
  if ! command -v dockerd >/dev/null 2>&1; then
    log "installing docker.io from the distribution"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
  fi
  if [ -d /run/systemd/system ]; then
    systemctl start docker
  else
    # No systemd as PID 1 (a container or CI sandbox): run the daemon in the background.
    log "starting dockerd (log: /var/log/clusterforge-dockerd.log)"
    nohup dockerd >/var/log/clusterforge-dockerd.log 2>&1 &
  fi
  for _ in $(seq 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  docker info >/dev/null 2>&1 || { log "dockerd did not come up; see /var/log/clusterforge-dockerd.log"; exit 1; }
fi
log "Docker engine $(docker version --format '{{.Server.Version}}') is running"

if ! command -v debootstrap >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
  log "installing debootstrap (node image fallback when no registry answers)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

if ! command -v ssh >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
  log "installing openssh-client (Ansible reaches the lab nodes over SSH, as on a real cluster)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-client >/dev/null
fi

if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
  log "installing chromium (the report screenshot test opens report.html in headless Chromium)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi

# The package cache the lab nodes and Molecule instances find at their default gateway (this
# machine on the container network) on port 3142. CLUSTERFORGE_APT_CACHE=0 leaves it out.
# Whether it answers is judged by the nodes' own script, asked about this machine.
cache_answers() {
  [ "$(CLUSTERFORGE_LAB_APT_CACHE_HOST=127.0.0.1 bash "$(dirname "$0")/../src/clusterforge/lab/apt/apt-proxy-detect" \
    http://deb.debian.org/debian)" != DIRECT ]
}
if [ "${CLUSTERFORGE_APT_CACHE:-1}" != 0 ] && [ "$(id -u)" -eq 0 ]; then
  if ! command -v apt-cacher-ng >/dev/null 2>&1; then
    log "installing apt-cacher-ng (the lab's and Molecule's package cache)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends apt-cacher-ng >/dev/null
  fi
  # The package's own default upstream for Debian is ftp.debian.org (backends_debian.default);
  # Debian's CDN, deb.debian.org, is the mirror the nodes' sources name and the one CI hosts reach.
  # A site's own choice (a line in backends_debian) is kept.
  if ! grep -qv '^[[:space:]]*\(#\|$\)' /etc/apt-cacher-ng/backends_debian 2>/dev/null; then
    log "package cache: fetching Debian from http://deb.debian.org/debian/ (/etc/apt-cacher-ng/backends_debian)"
    echo "http://deb.debian.org/debian/" >/etc/apt-cacher-ng/backends_debian
    if cache_answers; then
      if [ -d /run/systemd/system ]; then systemctl restart apt-cacher-ng; else /etc/init.d/apt-cacher-ng restart >/dev/null; fi
    fi
  fi
  if ! cache_answers; then
    if [ -d /run/systemd/system ]; then
      systemctl start apt-cacher-ng
    else
      # No systemd as PID 1 (a container or CI sandbox): the package's init script starts the
      # daemon as its own user, in the background.
      log "starting apt-cacher-ng (log: /var/log/apt-cacher-ng/)"
      /etc/init.d/apt-cacher-ng start >/dev/null
    fi
    for _ in $(seq 20); do
      cache_answers && break
      sleep 1
    done
  fi
  if cache_answers; then
    log "package cache: apt-cacher-ng answers on port 3142 (statistics: http://127.0.0.1:3142/acng-report.html)"
  else
    log "package cache: apt-cacher-ng did not come up; lab nodes and Molecule fetch from Debian directly"
  fi
fi
