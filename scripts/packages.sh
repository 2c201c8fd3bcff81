# Sourced by demo.sh and test.sh: `install_packages PKG…` installs the Debian packages named
# (nothing when the list is empty), with sudo unless run as root. etcd-server's package would
# start a system etcd: its service is kept from starting (the tests start their own).
install_packages() {
  [ $# -gt 0 ] || return 0
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "missing $*: install them with your package manager" >&2
    return 1
  fi
  echo "installing $* (Debian packages the build or the tests need)"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq >/dev/null
  echo exit 101 | $sudo tee /usr/sbin/policy-rc.d >/dev/null
  $sudo chmod +x /usr/sbin/policy-rc.d
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
  $sudo rm -f /usr/sbin/policy-rc.d
}

# The build's one system package: protoc, for the etcd client's generated code.
build_packages() {
  command -v protoc >/dev/null 2>&1 || echo protobuf-compiler
}
