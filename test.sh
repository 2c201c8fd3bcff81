#!/usr/bin/env bash
# Runs every test of the workspace. Installs what the build and the tests need first (Debian
# packages: protobuf-compiler for the etcd client's generated code, etcd-server for the tests that
# run a real etcd, the Python Kubernetes client for the real-client tests, tmux for the demo's
# terminal-view test, openssl to make the kubectl test's TLS certificate; kubectl is already on
# the machine).
set -euo pipefail
cd "$(dirname "$0")"

. scripts/packages.sh
need=($(build_packages))
[ -x /usr/bin/etcd ] || command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
/usr/bin/python3 -c 'import kubernetes' 2>/dev/null || need+=(python3-kubernetes)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
install_packages "${need[@]}"

cargo test --workspace

# The API server's suites and the informer's HTTP suites again on the durable backends: SQLite
# (a data directory per server) and a real etcd (one per test binary, one key prefix per server;
# one test at a time, since the tests count resourceVersions and etcd's revision is shared).
# `--workspace` keeps the features of the first build, so these reuse its binaries.
suites=(--workspace --test crud --test subresources --test namespaces --test defaults --test patches --test server_side_apply --test field_validation --test protobuf --test crds --test crds_kubectl --test admission_policy --test admission_webhook --test list --test watch --test server --test real_clients --test pods --test garbage_collection --test service_account_tokens --test rbac --test certificates --test autoscaling --test pod_security --test create_status --test resource_quotas
        --test reflector_http --test shared_informer_http --test runner_http --test custom_resources_http)
INFORMER_TEST_STORAGE=sqlite cargo test "${suites[@]}"
INFORMER_TEST_STORAGE=etcd cargo test "${suites[@]}" -- --test-threads=1

# The chaos suite on the durable backends: every fault once (the memory run above has each three
# times).
CHAOS_ROUNDS=13 INFORMER_TEST_STORAGE=sqlite cargo test --workspace --test chaos
CHAOS_ROUNDS=13 INFORMER_TEST_STORAGE=etcd cargo test --workspace --test chaos
