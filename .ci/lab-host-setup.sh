#!/usr/bin/env bash
# Make this machine able to host the lab and run the tests: a running Docker engine, debootstrap
# for building the node image where no container registry answers, an SSH client (the lab's
# default connection), and Debian's chromium for the
# test that opens the validation report in a real (headless) browser.
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
