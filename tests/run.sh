#!/usr/bin/env bash
# dcn's test suite: the command README.md gives for "run the tests", and what
# CI (.ci/run) runs. Each stage prints its wall time.
#
#   tests/run.sh            everything that runs on this machine
#
# Stages: formatting, lints, unit and integration tests, the static release
# binary (linkage, size, no OpenSSL), man pages in sync (part of cargo test),
# a short run of each fuzz target,
# and, as root with CI=true or DCN_LAB_E2E=1, the lab end to end: a real
# control plane in a systemd-nspawn container with two real guests talking
# TCP (tests/lab_e2e.rs, about 10 minutes once the download cache in
# /var/cache/dcn-lab is warm), then two edge sites with two real guests each
# and the DCN failure modes: WAN cut, edge and control-plane power cycles,
# checked from inside the guests, with certificates of four minutes that
# renew under them, then Tempest (tests/lab_edges.rs, about 30 minutes;
# when the lifecycle code changed in the last commit, or with
# DCN_LAB_LIFECYCLE=1, also a CA rotation and the control plane backed up,
# replaced and restored: about 15 minutes more); and,
# as root when the edge chain's code changed in the last commit (or with
# DCN_IMAGE_E2E=1), the edge ISO built (tests/image_e2e.rs, about 6 minutes
# with a cold /var/cache/dcn-image) and a bare-metal site deployed from its
# BMCs with it: real VMs booted from virtual media, installed and joined
# (tests/site_deploy_e2e.rs, about 25 minutes), with power cuts through the
# BMCs as a node joins, after it is placed and while it applies a site
# config. Every cut point of a deploy, one after the other, is
# `DCN_EDGE_ISO=… cargo test --test power_cut_e2e -- --ignored` (about 30
# minutes, not in CI).
# DCN_IMAGE_E2E=0 skips them.
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
    echo "<== $name: $((SECONDS - start))s, $(df -h --output=avail . | tail -1 | tr -d ' ') free"
}

# In CI the build shares its disk with the labs, and a fresh machine may
# have little to spare: builds keep no incremental state and only line
# tables for backtraces (together about 4 GB less under target/), and the
# fuzz build is removed once its runs are done (1.4 GB).
if [[ ${CI:-} == true ]]; then
    export CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=line-tables-only
fi

# Tools the tests call. Installed when missing and we are root (CI, a fresh
# machine); otherwise the tests that need them say so.
prerequisites() {
    local missing=()
    command -v openssl >/dev/null || missing+=(openssl)
    command -v file >/dev/null || missing+=(file)
    # tests/vagrant.rs validates vagrant/Vagrantfile (vagrant-libvirt needs
    # modinfo, from kmod, to validate).
    command -v vagrant >/dev/null || missing+=(vagrant vagrant-libvirt)
    command -v modinfo >/dev/null || missing+=(kmod)
    # The BMC tests run the Redfish emulator (sushy-tools) from a virtualenv.
    command -v python3 >/dev/null || missing+=(python3)
    python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
    if ((${#missing[@]})); then
        if [[ $(id -u) == 0 ]]; then
            # A fresh machine may have no package lists yet.
            apt-get -o DPkg::Lock::Timeout=600 update -qq
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

# The edge chain (the ISO built, then a site deployed from its BMCs) runs
# when what it exercises changed in the last commit — the image and its
# installer, the BMC client, the join and its service, progress reports,
# the deploy, the lab that hosts the bare-metal site — or when asked for.
# The ISO holds what the recipes of the edge role name, and is built through
# the host adapters, so both count.
EDGE_CHAIN_PATHS=(images recipes src/recipes src/host src/image src/bmc src/join src/serve
    src/site_deploy src/sites/progress.rs src/engine src/deploy src/lab tests/common
    tests/image_e2e.rs tests/site_deploy_e2e.rs)
# The edge lab's long lifecycle drills (a CA rotation; the control plane
# backed up, replaced by a blank host and restored: about 15 minutes) run
# when their code changed in the last commit, or when asked for.
LIFECYCLE_PATHS=(src/certs src/backup src/serve/certificate.rs src/join/node_cert.rs
    src/lab/manage.rs tests/lifecycle)
lifecycle_wanted() {
    [[ ${DCN_LAB_LIFECYCLE:-} == 0 ]] && return 1
    [[ ${DCN_LAB_LIFECYCLE:-} == 1 ]] && return 0
    [[ ${CI:-} == true ]] || return 1
    git rev-parse -q --verify HEAD~1 >/dev/null || return 0
    ! git diff --quiet HEAD~1 HEAD -- "${LIFECYCLE_PATHS[@]}"
}

image_e2e_wanted() {
    [[ ${DCN_IMAGE_E2E:-} == 0 ]] && return 1
    [[ ${DCN_IMAGE_E2E:-} == 1 ]] && return 0
    [[ ${CI:-} == true ]] || return 1
    git rev-parse -q --verify HEAD~1 >/dev/null || return 0
    ! git diff --quiet HEAD~1 HEAD -- "${EDGE_CHAIN_PATHS[@]}"
}

# Tools of the image build. (The deploy test's VMs run in the lab's BMC
# container, whose qemu, libvirt and OVMF come from the lab's own root
# filesystem, not from this machine.)
image_prerequisites() {
    local missing=()
    for t in debootstrap mksquashfs xorriso grub-mkrescue mformat; do
        command -v "$t" >/dev/null || missing+=("$t")
    done
    [[ -d /usr/lib/grub/i386-pc && -d /usr/lib/grub/x86_64-efi ]] || missing+=(grub)
    if ((${#missing[@]})); then
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y \
            --no-install-recommends \
            debootstrap squashfs-tools xorriso grub-pc-bin grub-efi-amd64-bin grub-common \
            mtools dosfstools fdisk
    fi
}

# Each fuzz target (fuzz/) from its seeds for FUZZ_SECONDS (default 20): a
# smoke run that they build and survive mutation (any input over 10 s or
# 2 GiB is a failure, as is a panic), not a fuzzing campaign. libFuzzer's
# instrumentation needs unstable flags: RUSTC_BOOTSTRAP lets the stable
# toolchain pass them. No sanitizer: the targets hunt panics, hangs and
# unbounded memory (dcn's only unsafe code is the YAML guard's libyaml
# reader). Cost on 2 cores, cold: installing cargo-fuzz a few minutes, the
# instrumented release build 6-11 minutes, the runs 2 minutes.
fuzz_smoke() {
    command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz
    local seconds=${FUZZ_SECONDS:-20} work t
    work=$(mktemp -d)
    # The subshell's EXIT trap cleans up on success and failure alike (a
    # RETURN trap would outlive this function and fire again in stage()).
    (
        trap 'rm -rf "$work"' EXIT
        cd fuzz
        export RUSTC_BOOTSTRAP=1
        cargo fuzz build --sanitizer none
        for t in $(cargo fuzz list); do
            mkdir -p "$work/$t"
            local seeds=()
            [[ -d seeds/$t ]] && seeds+=("seeds/$t")
            case $t in
                iso_payload) seeds+=(../tests/fixtures/iso) ;;
                redfish_response) seeds+=(../tests/fixtures/redfish/sushy ../tests/fixtures/redfish/quirks) ;;
            esac
            echo "fuzzing $t for ${seconds}s"
            if ! cargo fuzz run --sanitizer none "$t" "$work/$t" "${seeds[@]}" -- \
                -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
                -print_final_stats=1 >"$work/$t.log" 2>&1; then
                tail -40 "$work/$t.log" >&2
                echo "FAIL: fuzz target $t (its input is under fuzz/artifacts/$t)" >&2
                exit 1
            fi
            grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$work/$t.log" || true
        done
    )
}

stage prerequisites prerequisites
stage fmt cargo fmt --check
stage clippy cargo clippy --locked --all-targets -- -D warnings
stage test cargo test --locked
# The tests that need a tool prerequisites installed (vagrant).
stage test-ignored-tools cargo test --locked --test vagrant -- --ignored
stage static-binary static_binary
stage fuzz-smoke fuzz_smoke
if [[ ${CI:-} == true ]]; then rm -rf fuzz/target; fi

if [[ $(id -u) == 0 && ( ${CI:-} == true || ${DCN_LAB_E2E:-} == 1 ) ]]; then
    lifecycle=0
    if lifecycle_wanted; then lifecycle=1; fi
    echo "==> lab lifecycle drills (CA rotation, backup/restore): DCN_LAB_LIFECYCLE=$lifecycle"
    stage lab-e2e env DCN_LAB_E2E=1 DCN_LAB_LIFECYCLE=$lifecycle \
        cargo test --locked --test lab_e2e --test lab_edges -- --ignored --nocapture
else
    echo "==> lab-e2e skipped (needs root, and CI=true or DCN_LAB_E2E=1)"
fi
if [[ $(id -u) == 0 ]] && image_e2e_wanted; then
    stage image-prerequisites image_prerequisites
    stage image-e2e env DCN_IMAGE_E2E=1 DCN_IMAGE_DCN_BINARY="$PWD/$BIN" \
        timeout 3000 cargo test --locked --test image_e2e -- --ignored --nocapture
    stage site-deploy-e2e env DCN_EDGE_ISO=/var/cache/dcn-image/e2e/dcn-edge.iso \
        timeout 3000 cargo test --locked --test site_deploy_e2e -- --ignored --nocapture
else
    echo "==> image-e2e and site-deploy-e2e skipped (need root, and a change to the edge chain's code, or DCN_IMAGE_E2E=1)"
fi
echo "all tests passed"
