#!/usr/bin/env bash
# dcn's test suite: the command README.md gives for "run the tests", and what
# CI (.ci/run) runs. Each stage prints its wall time.
#
#   tests/run.sh            everything that runs on this machine
#
# Stages: formatting, lints, unit and integration tests, the static release
# binary (linkage, size, no OpenSSL), man pages in sync (part of cargo test),
# and, as root with CI=true or DCN_LAB_E2E=1, the lab end to end: a real
# control plane in a systemd-nspawn container (about 10 minutes once the
# download cache in /var/cache/dcn-lab is warm).
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TERM_COLOR=never
TARGET=x86_64-unknown-linux-gnu
BIN=target/$TARGET/release/dcn
MAX_BINARY_BYTES=$((12 * 1024 * 1024))

stage() {
    local name=$1; shift
    local start=$SECONDS
    echo "==> $name"
    "$@"
    echo "<== $name: $((SECONDS - start))s"
}

# Tools the tests call. Installed when missing and we are root (CI, a fresh
# machine); otherwise the tests that need them say so.
prerequisites() {
    local missing=()
    command -v openssl >/dev/null || missing+=(openssl)
    command -v file >/dev/null || missing+=(file)
    if ((${#missing[@]})); then
        if [[ $(id -u) == 0 ]]; then
            DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "${missing[@]}"
        else
            echo "missing tools: ${missing[*]} (install them, or run as root to have them installed)" >&2
            exit 1
        fi
    fi
}

static_binary() {
    cargo build --release --locked
    local desc
    desc=$(file "$BIN")
    echo "$desc"
    grep -q "statically linked" <<<"$desc" || { echo "FAIL: $BIN is not statically linked" >&2; exit 1; }
    if ldd "$BIN" 2>&1 | grep -qv "not a dynamic executable"; then
        echo "FAIL: ldd finds dynamic dependencies in $BIN" >&2; exit 1
    fi
    local size
    size=$(stat -c %s "$BIN")
    echo "size: $size bytes"
    ((size < MAX_BINARY_BYTES)) || { echo "FAIL: $BIN is $size bytes, over the 12 MB budget" >&2; exit 1; }
    if cargo tree --locked -e normal | grep -iE 'openssl|native-tls|aws-lc'; then
        echo "FAIL: an OpenSSL/native TLS crate is in the dependency tree" >&2; exit 1
    fi
}

stage prerequisites prerequisites
stage fmt cargo fmt --check
stage clippy cargo clippy --locked --all-targets -- -D warnings
stage test cargo test --locked
stage static-binary static_binary

if [[ $(id -u) == 0 && ( ${CI:-} == true || ${DCN_LAB_E2E:-} == 1 ) ]]; then
    stage lab-e2e env DCN_LAB_E2E=1 cargo test --locked --test lab_e2e -- --nocapture
else
    echo "==> lab-e2e skipped (needs root, and CI=true or DCN_LAB_E2E=1)"
fi
echo "all tests passed"
