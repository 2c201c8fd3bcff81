#!/usr/bin/env bash
# Runs the main job: `informer demo` (a sample pod controller under load against the embedded API
# server, with a live terminal view). Installs protoc first if the machine lacks it. Arguments go
# to the demo (`./demo.sh --help`, `./demo.sh --duration 30`, `./demo.sh --chaos`).
set -euo pipefail
cd "$(dirname "$0")"
. scripts/packages.sh
# shellcheck disable=SC2046
install_packages $(build_packages)
exec cargo run --release -p informer-cli -- demo "$@"
