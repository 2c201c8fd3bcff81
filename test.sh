#!/usr/bin/env bash
# Runs every test of the workspace. Installs what the tests need first (Debian packages: the
# Python Kubernetes client for the real-client tests, tmux for the demo's terminal-view test,
# openssl to make the kubectl test's TLS certificate; kubectl is already on the machine).
set -euo pipefail
cd "$(dirname "$0")"

if ! /usr/bin/python3 -c 'import kubernetes' 2>/dev/null || ! command -v tmux >/dev/null 2>&1 \
  || ! command -v openssl >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    echo "installing python3-kubernetes, tmux and openssl (for the real-client and terminal-view tests)"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-kubernetes tmux openssl >/dev/null
  fi
fi

cargo test --workspace
