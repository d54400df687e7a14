//! The disk a lab needs. Its containers' writable layers (the control
//! plane's packages and data, the edges', the bare-metal VMs' disks) live
//! in the lab directory, on this host's filesystem. The lab checks that
//! room once, before any container boots, so a host short of space fails in
//! seconds with the numbers instead of in the middle of an install.
//!
//! The hosts' own preflight (`disk-var`: 10 GiB under /var for the control
//! plane, 5 for an edge) is sized for a dedicated machine that keeps images
//! and instance disks. In the lab every container's /var is this one shared
//! filesystem, already judged here against what a lab uses, so the lab's
//! `standalone init` and its edges' `dcn join` skip that one check. A join
//! typed by hand in a lab container still makes it.

use super::bare_metal::Site;
use super::state::VmKind;
use anyhow::{Result, bail};
use std::path::Path;

const GIB: u64 = 1 << 30;
/// The control plane's installed packages (about 3.8 GB), its databases,
/// logs and the guest images in glance.
const CONTROL_PLANE: u64 = 5 * GIB;
/// An edge container over the prepared edge layer: its writable layer
/// (about 250 MB) with nova's instance files and logs.
const EDGE_OVER_LAYER: u64 = GIB;
/// An edge container that installs its packages itself (no edge layer).
const EDGE_INSTALLING: u64 = 3 * GIB;
/// The BMC container: libvirt's state and the VMs' serial logs.
const BMC: u64 = GIB;
/// A bare-metal node that installs: the installed system in its qcow2
/// disk (1.9 GB measured) and its copy of the edge ISO on the control
/// plane (0.6 GB).
const VM_WITH_DISK: u64 = 3 * GIB;

/// What the lab directory will grow to, at most, for this lab.
pub fn need_bytes(edge_hosts: u8, edge_layer: bool, bare_metal: Option<&Site>) -> u64 {
    let per_edge = if edge_layer {
        EDGE_OVER_LAYER
    } else {
        EDGE_INSTALLING
    };
    let bm = bare_metal.map_or(0, |site| {
        // The no-disk node has none; the wrong-password one never boots,
        // so its disk stays empty.
        let disks = site.vms.iter().filter(|v| v.kind == VmKind::Node).count() as u64;
        BMC + disks * VM_WITH_DISK
    });
    CONTROL_PLANE + u64::from(edge_hosts) * per_edge + bm
}

/// Refuse a lab directory whose filesystem has less than `need` free.
pub fn check(dir: &Path, need: u64) -> Result<()> {
    let free = crate::host::space::free_bytes(dir)?;
    judge(dir, need, free)
}

fn judge(dir: &Path, need: u64, free: u64) -> Result<()> {
    if free < need {
        let gib = |b: u64| b as f64 / GIB as f64;
        bail!(
            "this lab needs about {:.0} GiB free for {} (its containers' writable layers), \
             and {:.1} GiB is free there: free some space, or give --dir on a filesystem with more room",
            gib(need),
            dir.display(),
            gib(free)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_need_grows_with_the_edges_and_the_vms_that_have_a_disk() {
        let cp = need_bytes(0, true, None);
        assert_eq!(cp, CONTROL_PLANE);
        assert_eq!(need_bytes(2, true, None), cp + 2 * EDGE_OVER_LAYER);
        assert_eq!(need_bytes(2, false, None), cp + 2 * EDGE_INSTALLING);
        // Two nodes and the two failing ones, which never install.
        let site = Site::plan(1, 2, true);
        assert_eq!(
            need_bytes(0, true, Some(&site)),
            cp + BMC + 2 * VM_WITH_DISK
        );
    }

    #[test]
    fn a_short_filesystem_is_refused_with_both_numbers_and_the_way_out() {
        let dir = Path::new("/var/lib/dcn-lab");
        assert!(judge(dir, 5 * GIB, 5 * GIB).is_ok());
        let e = judge(dir, 5 * GIB, 3 * GIB + GIB / 2)
            .unwrap_err()
            .to_string();
        assert!(e.contains("about 5 GiB free for /var/lib/dcn-lab"), "{e}");
        assert!(e.contains("3.5 GiB is free"), "{e}");
        assert!(e.contains("--dir"), "{e}");
    }
}
