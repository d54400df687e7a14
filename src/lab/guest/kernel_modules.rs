//! The kernel modules the guest loads: which `.ko` files, dependencies
//! first, read from the kernel package's `lib/modules/<release>`.

use crate::host::Files;
use anyhow::{Context, Result, bail};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The files (relative to `modules`, the kernel's `lib/modules/<release>`)
/// to load, dependencies first, for the `wanted` module names. Modules
/// built into the kernel are left out.
pub fn module_load_order(files: &Files, modules: &Path, wanted: &[&str]) -> Result<Vec<String>> {
    let builtin: BTreeSet<String> = files
        .read_string(modules.join("modules.builtin"))
        .ok()
        .flatten()
        .unwrap_or_default()
        .lines()
        .map(module_name)
        .collect();
    let mut index = BTreeMap::new();
    index_modules(files, modules, modules, &mut index)?;
    let mut order = Vec::new();
    let mut seen = BTreeSet::new();
    let modules = Modules {
        files,
        root: modules,
        index: &index,
        builtin: &builtin,
    };
    for name in wanted {
        visit(&module_name(name), &modules, &mut seen, &mut order)?;
    }
    Ok(order)
}

/// The kernel's modules: where they are, and by name the file of each and
/// those built in.
struct Modules<'a> {
    files: &'a Files,
    root: &'a Path,
    index: &'a BTreeMap<String, String>,
    builtin: &'a BTreeSet<String>,
}

fn visit(
    name: &str,
    modules: &Modules<'_>,
    seen: &mut BTreeSet<String>,
    order: &mut Vec<String>,
) -> Result<()> {
    if !seen.insert(name.to_string()) || modules.builtin.contains(name) {
        return Ok(());
    }
    let Some(rel) = modules.index.get(name) else {
        bail!("the guest kernel has no module {name} (neither a file nor built in)");
    };
    let data = modules
        .files
        .read(modules.root.join(rel))
        .with_context(|| format!("reading {rel}"))?
        .with_context(|| format!("the guest kernel has no {rel}"))?;
    for dep in module_depends(&data) {
        visit(&dep, modules, seen, order)?;
    }
    order.push(rel.clone());
    Ok(())
}

/// Module names as the kernel spells them: `-` and `_` are the same.
fn module_name(path_or_name: &str) -> String {
    let base = path_or_name.rsplit('/').next().unwrap_or(path_or_name);
    base.trim_end_matches(".ko").replace('-', "_")
}

fn index_modules(
    files: &Files,
    root: &Path,
    dir: &Path,
    out: &mut BTreeMap<String, String>,
) -> Result<()> {
    for name in files.list(dir)? {
        let path = dir.join(name);
        if files.is_dir(&path)? {
            index_modules(files, root, &path, out)?;
        } else if path.extension().is_some_and(|e| e == "ko") {
            let rel = path.strip_prefix(root)?.to_string_lossy().into_owned();
            out.insert(module_name(&rel), rel);
        }
    }
    Ok(())
}

/// The `depends=` entry of a module's `.modinfo` strings.
pub fn module_depends(ko: &[u8]) -> Vec<String> {
    const KEY: &[u8] = b"depends=";
    let Some(at) = ko.windows(KEY.len()).position(|w| w == KEY) else {
        return Vec::new();
    };
    let rest = &ko[at + KEY.len()..];
    let end = rest.iter().position(|b| *b == 0).unwrap_or(rest.len());
    String::from_utf8_lossy(&rest[..end])
        .split(',')
        .filter(|d| !d.is_empty())
        .map(module_name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_module(root: &Path, rel: &str, depends: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let mut data = b"\x7fELF....\0license=GPL\0".to_vec();
        data.extend_from_slice(format!("depends={depends}\0vermagic=6.1\0").as_bytes());
        std::fs::write(p, data).unwrap();
    }

    #[test]
    fn modules_load_dependencies_first_and_skip_builtins() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        let files = Files::new("/", false);
        fake_module(r, "kernel/drivers/virtio/virtio.ko", "");
        fake_module(r, "kernel/drivers/virtio/virtio_ring.ko", "virtio");
        fake_module(
            r,
            "kernel/drivers/virtio/virtio_pci.ko",
            "virtio_ring,virtio",
        );
        fake_module(
            r,
            "kernel/drivers/net/virtio_net.ko",
            "net_failover,virtio_ring,virtio",
        );
        fake_module(r, "kernel/drivers/net/net_failover.ko", "failover");
        fake_module(r, "kernel/fs/nls/nls_iso8859-1.ko", "");
        std::fs::write(r.join("modules.builtin"), "kernel/net/core/failover.ko\n").unwrap();
        let order =
            module_load_order(&files, r, &["virtio_pci", "virtio_net", "nls_iso8859_1"]).unwrap();
        assert_eq!(
            order,
            [
                "kernel/drivers/virtio/virtio.ko",
                "kernel/drivers/virtio/virtio_ring.ko",
                "kernel/drivers/virtio/virtio_pci.ko",
                "kernel/drivers/net/net_failover.ko",
                "kernel/drivers/net/virtio_net.ko",
                "kernel/fs/nls/nls_iso8859-1.ko",
            ]
        );
        let err = module_load_order(&files, r, &["isofs"]).unwrap_err();
        assert!(format!("{err}").contains("no module isofs"), "{err}");
    }
}
