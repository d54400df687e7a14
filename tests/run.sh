#!/usr/bin/env bash
# dcn's test suite: the command README.md gives for "run the tests", and what
# CI (.ci/run) runs. Each stage prints its wall time.
#
#   tests/run.sh            everything that runs on this machine
#
# With CI=true a stage still running 85 minutes after the start is stopped
# (DCN_CI_BUDGET_SECONDS), and every run ends with its stages' times.
#
# Stages: formatting, lints, unit and integration tests, the static release
# binary (linkage, size, no OpenSSL), man pages in sync (part of cargo test),
# a short run of each fuzz target,
# and, as root with CI=true or DCN_LAB_E2E=1, the lab end to end: a real
# control plane in a systemd-nspawn container with two real guests talking
# TCP (tests/lab_e2e.rs, about 14 minutes once the download cache in
# /var/cache/dcn-lab is warm), then two edge sites with two real guests each
# and the DCN failure modes: WAN cut, edge and control-plane power cycles,
# checked from inside the guests, with certificates of four minutes that
# renew under them, then Tempest (tests/lab_edges.rs, about 35 minutes;
# in CI both are left out when the last commit touched only the edge
# chain's own code or docs;
# when the lifecycle code changed in the last commit, or with
# DCN_LAB_LIFECYCLE=1, also a CA rotation and the control plane backed up,
# replaced and restored: about 15 minutes more); and,
# as root when the edge chain's code changed in the last commit (or with
# DCN_IMAGE_E2E=1), the edge ISO built (tests/image_e2e.rs, about 6 minutes
# with a cold /var/cache/dcn-image) and a bare-metal site deployed from its
# BMCs with it: real VMs booted from virtual media, installed and joined
# (tests/site_deploy_e2e.rs, about 50 minutes), with power cuts through the
# BMCs as a node joins, after it is placed and while it applies a site
# config. As root with CI=true or DCN_LAB_E2E=1, when the scale harness or
# what it measures changed in the last commit (or with DCN_LAB_SCALE=1),
# the harness at small N: 20 then 50 simulated edge hosts with real OVN
# chassis, four with a real nova-compute and four with a replayed one, then
# the reconnect storms (tests/lab_scale.rs, about 21 minutes). Every cut
# point of a deploy, one after the other, is `DCN_EDGE_ISO=… cargo test
# --test power_cut_e2e -- --ignored` (about 30 minutes, not in CI).
# DCN_IMAGE_E2E=0 skips them. In CI, DCN_LAB_CONTROL_PLANE=1 and
# DCN_LAB_EDGES=1 run lab_e2e and lab_edges whatever the last commit
# touched (0 skips them).
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TERM_COLOR=never
TARGET=x86_64-unknown-linux-gnu
BIN=target/$TARGET/release/dcn
MAX_BINARY_BYTES=$((12 * 1024 * 1024))

# Each stage's wall time, printed again as a table when the run ends (passed,
# failed or over its budget), so that the last lines of a CI log say where
# the time went.
STAGE_TIMES=()
CURRENT_STAGE=
summary() {
    local rc=$?
    ((${#STAGE_TIMES[@]})) || return 0
    echo "==> stage times (total ${SECONDS}s)"
    printf '  %s\n' "${STAGE_TIMES[@]}"
    [[ -n $CURRENT_STAGE ]] && echo "  $CURRENT_STAGE: stopped after $((SECONDS - STAGE_START))s (exit status $rc)"
    return 0
}
trap summary EXIT

# CI stops a run at 90 minutes without a word. With DCN_CI_BUDGET_SECONDS
# (CI: 85 minutes) a stage still running when the budget is spent is
# stopped here instead, so the log ends with the stage times.
BUDGET=${DCN_CI_BUDGET_SECONDS:-}
[[ -z $BUDGET && ${CI:-} == true ]] && BUDGET=5100

stage() {
    local name=$1; shift
    STAGE_START=$SECONDS
    CURRENT_STAGE=$name
    echo "==> $name"
    if [[ -z $BUDGET ]]; then
        "$@"
    else
        local left=$((BUDGET - SECONDS)) pid dog rc=0
        ((left > 0)) || { echo "FAIL: the ${BUDGET}s budget is spent before stage $name" >&2; exit 1; }
        # Its own process group (job control), so that the budget stops
        # the stage's whole tree.
        set -m
        "$@" &
        pid=$!
        set +m
        (
            trap 'kill "$nap" 2>/dev/null; exit 0' TERM
            sleep "$left" &
            nap=$!
            wait "$nap"
            echo "FAIL: stage $name still running when the ${BUDGET}s budget was spent" >&2
            kill -TERM -- "-$pid" 2>/dev/null
        ) &
        dog=$!
        wait "$pid" || rc=$?
        kill "$dog" 2>/dev/null || true
        wait "$dog" 2>/dev/null || true
        ((rc == 0)) || exit "$rc"
    fi
    STAGE_TIMES+=("$name: $((SECONDS - STAGE_START))s")
    CURRENT_STAGE=
    echo "<== $name: $((SECONDS - STAGE_START))s, $(df -h --output=avail . | tail -1 | tr -d ' ') free"
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
    # tests/ssh_hostkeys.rs runs the edge image's host-key script.
    command -v ssh-keygen >/dev/null || missing+=(openssh-client)
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

# Whether a heavy chain runs: its variable (VAR=1 or 0) decides when set;
# outside CI, OUTSIDE_CI (yes or no) does; in CI, whether the last commit
# touched PATHSPEC (a clone without that commit runs everything).
chain_wanted() {
    local var=$1 outside_ci=$2
    shift 2
    [[ ${!var:-} == 0 ]] && return 1
    [[ ${!var:-} == 1 ]] && return 0
    [[ ${CI:-} == true ]] || { [[ $outside_ci == yes ]]; return; }
    git rev-parse -q --verify HEAD~1 >/dev/null || return 0
    ! git diff --quiet HEAD~1 HEAD -- "$@"
}

# The edge chain (the ISO built, then a site deployed from its BMCs) runs
# when what it exercises changed in the last commit — the image and its
# installer, the BMC client, the join and its service, progress reports,
# the deploy, the lab that hosts the bare-metal site — or when asked for.
# The ISO holds what the recipes of the edge role name, and is built through
# the host adapters, so both count.
EDGE_CHAIN_PATHS=(images recipes src/recipes src/host src/image src/bmc src/edge src/wire
    src/wire.rs src/centre/serve src/centre/site_deploy src/centre/sites/progress.rs src/engine
    src/openstack/compute.rs src/deploy src/lab tests/common tests/image_e2e.rs
    tests/site_deploy_e2e.rs ":(exclude)src/lab/scale")
# The edge lab's long lifecycle drills (a CA rotation; the control plane
# backed up, replaced by a blank host and restored: about 15 minutes) run
# when their code changed in the last commit, or when asked for.
LIFECYCLE_PATHS=(src/certs src/centre/renewal src/centre/backup src/centre/serve/certificate.rs
    src/edge/join/node_cert.rs src/lab/manage.rs tests/lifecycle)
lifecycle_wanted() { chain_wanted DCN_LAB_LIFECYCLE no "${LIFECYCLE_PATHS[@]}"; }

# The container labs (tests/lab_e2e.rs: the control plane and its guests;
# tests/lab_edges.rs: bundle joins, WAN cuts, power cycles, node accounts,
# Tempest) run unless the last commit touched only what they do not
# exercise: the ISO and its installer, the BMC client, the deploy driven
# through BMCs and the tests of those (the edge chain's own), and the docs.
# A landing of the edge chain's work then fits in CI's budget: the chain
# alone is about 50 minutes here, and lab_e2e 15 more.
NOT_LAB_PATHS=(images src/image src/edge/install src/bmc src/centre/site_deploy src/lab/bare_metal
    tests/image_e2e.rs tests/site_deploy_e2e.rs tests/power_cut_e2e.rs
    tests/common/bare_metal.rs tests/ssh_hostkeys.rs src/lab/scale tests/lab_scale.rs
    src/centre/upgrade src/app/upgrade.rs src/cli/upgrade.rs src/lab/publish.rs tests/lab_upgrade.rs
    src/centre/site_upgrade src/centre/edge_release src/centre/site_images.rs src/app/site_upgrade.rs
    tests/upgrade docs README.md)
lab_wanted() {
    local skip=() p
    for p in "${NOT_LAB_PATHS[@]}"; do skip+=(":(exclude)$p"); done
    chain_wanted "$1" yes . "${skip[@]}"
}

image_e2e_wanted() { chain_wanted DCN_IMAGE_E2E no "${EDGE_CHAIN_PATHS[@]}"; }

# The scale harness at small N (tests/lab_scale.rs: a lab with two carriers,
# 20 then 50 simulated edge hosts, then every link cut at once and the
# control plane restarted, then a second run that joins no one again and
# calibrates its computes: about 21 minutes) runs when the harness
# or what it measures most directly changed in the last commit (the join
# service's rounds, the southbound's client), or when asked for.
SCALE_PATHS=(src/lab/scale tests/lab_scale.rs src/centre/serve src/openstack/southbound)
scale_wanted() { chain_wanted DCN_LAB_SCALE no "${SCALE_PATHS[@]}"; }

# The upgrades (tests/lab_upgrade.rs: a newer dcn built from this tree
# with a bumped version and a recipe change, Debian packages rebuilt and
# published in the lab's repository, Debian's updates of the base system;
# `dcn upgrade` of the control plane with two guests on it, then `dcn site
# upgrade` of three edge sites with guest pairs on two of them, a package
# that fails on one node and its fix, and a site's image cache over a
# limited link: about 35 minutes cold, 4 of them the newer dcn's build,
# 25 warm) runs when
# the upgrades' code or what decides their restarts changed in the last
# commit, or when asked for.
UPGRADE_PATHS=(src/centre/upgrade src/app/upgrade.rs src/cli/upgrade.rs src/release.rs
    src/host/apt src/host/apt.rs src/deploy/packages.rs src/deploy/service src/lab/publish.rs
    src/centre/site_upgrade src/centre/edge_release src/centre/site_images.rs src/app/site_upgrade.rs
    src/edge/upgrade src/centre/serve/upgrade.rs src/centre/sites/upgrade_campaign.rs
    src/centre/sites/upgrade_state.rs src/centre/sites/image_files.rs src/openstack/images.rs
    src/openstack/local_node.rs src/wire/upgrade.rs tests/lab_upgrade.rs tests/upgrade)
upgrade_wanted() { chain_wanted DCN_LAB_UPGRADE no "${UPGRADE_PATHS[@]}"; }

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
# reader). The build is unoptimised (--dev, with debug assertions and
# overflow checks, as the default build has): 3.7 minutes on 2 cores
# against 8.3 optimised (and 7.8 at opt-level 1). Its runs try 20 to 50
# times fewer inputs (backup_archive about 120 a second, join_router about
# 22,000), which a smoke run can spare; a fuzzing campaign builds
# optimised. Cost cold: cargo-fuzz installed in about a minute, the build
# 4 minutes, the runs 3.
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
        cargo fuzz build --dev --sanitizer none
        for t in $(cargo fuzz list); do
            mkdir -p "$work/$t"
            local seeds=()
            [[ -d seeds/$t ]] && seeds+=("seeds/$t")
            case $t in
                iso_payload) seeds+=(../tests/fixtures/iso) ;;
                redfish_response) seeds+=(../tests/fixtures/redfish/sushy ../tests/fixtures/redfish/quirks) ;;
            esac
            echo "fuzzing $t for ${seconds}s"
            if ! cargo fuzz run --dev --sanitizer none "$t" "$work/$t" "${seeds[@]}" -- \
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
    if lab_wanted DCN_LAB_CONTROL_PLANE; then
        stage lab-e2e env DCN_LAB_E2E=1 cargo test --locked --test lab_e2e -- --ignored --nocapture
    else
        echo "==> lab-e2e skipped (the last commit touched only the edge chain's own code or docs; DCN_LAB_CONTROL_PLANE=1 runs it)"
    fi
    if lab_wanted DCN_LAB_EDGES; then
        lifecycle=0
        if lifecycle_wanted; then lifecycle=1; fi
        echo "==> lab lifecycle drills (CA rotation, backup/restore): DCN_LAB_LIFECYCLE=$lifecycle"
        stage lab-edges env DCN_LAB_E2E=1 DCN_LAB_LIFECYCLE=$lifecycle \
            cargo test --locked --test lab_edges -- --ignored --nocapture
    else
        echo "==> lab-edges skipped (the last commit touched only the edge chain's own code or docs; DCN_LAB_EDGES=1 runs it)"
    fi
    if upgrade_wanted; then
        stage lab-upgrade env DCN_LAB_E2E=1 cargo test --locked --test lab_upgrade -- --ignored --nocapture
    else
        echo "==> lab-upgrade skipped (the last commit did not touch the upgrade or what decides its restarts; DCN_LAB_UPGRADE=1 runs it)"
    fi
    if scale_wanted; then
        stage lab-scale env DCN_LAB_E2E=1 cargo test --locked --test lab_scale -- --ignored --nocapture
    else
        echo "==> lab-scale skipped (the last commit did not touch the harness or what it measures; DCN_LAB_SCALE=1 runs it)"
    fi
else
    echo "==> lab-e2e, lab-edges, lab-upgrade and lab-scale skipped (need root, and CI=true or DCN_LAB_E2E=1)"
fi
if [[ $(id -u) == 0 ]] && image_e2e_wanted; then
    stage image-prerequisites image_prerequisites
    stage image-e2e env DCN_IMAGE_E2E=1 DCN_IMAGE_DCN_BINARY="$PWD/$BIN" \
        timeout 3000 cargo test --locked --test image_e2e -- --ignored --nocapture
    stage site-deploy-e2e env DCN_EDGE_ISO=/var/cache/dcn-image/e2e/dcn-edge.iso \
        timeout 3600 cargo test --locked --test site_deploy_e2e -- --ignored --nocapture
else
    echo "==> image-e2e and site-deploy-e2e skipped (need root, and a change to the edge chain's code, or DCN_IMAGE_E2E=1)"
fi
echo "all tests passed"
