//! User and group lookup in a root directory's `/etc/passwd` and
//! `/etc/group`, so ownership is resolved against the system being
//! configured (which may be an image folder), not the machine running dcn.

use super::read::ReadSpec;
use anyhow::{Context, Result, bail};
use std::path::Path;

/// The numeric id of `name` in `root/etc/{passwd,group}`.
fn lookup(root: &Path, file: &str, name: &str) -> Result<u32> {
    if let Ok(id) = name.parse::<u32>() {
        return Ok(id);
    }
    let path = root.join("etc").join(file);
    let text = super::read::read_string(&path, &ReadSpec::up_to(super::read::MAX_STATE))?;
    for line in text.lines() {
        let mut fields = line.split(':');
        if fields.next() == Some(name) {
            let id = fields.nth(1).and_then(|f| f.parse().ok());
            return id.with_context(|| format!("malformed line for {name} in {}", path.display()));
        }
    }
    bail!(
        "{} {name:?} does not exist in {} (is the package that creates it installed?)",
        if file == "passwd" { "user" } else { "group" },
        path.display()
    )
}

/// The name of numeric id `id` in `root/etc/{passwd,group}`, or the number
/// itself when no entry has it.
fn name_of(root: &Path, file: &str, id: u32) -> Result<String> {
    let path = root.join("etc").join(file);
    let text = super::read::read_string(&path, &ReadSpec::up_to(super::read::MAX_STATE))?;
    let wanted = id.to_string();
    Ok(text
        .lines()
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.get(2) == Some(&wanted.as_str()))
        .and_then(|f| f.first().map(|n| n.to_string()))
        .unwrap_or(wanted))
}

/// The user name of `uid` under `root`.
pub fn user_name(root: &Path, uid: u32) -> Result<String> {
    name_of(root, "passwd", uid)
}

/// The group name of `gid` under `root`.
pub fn group_name(root: &Path, gid: u32) -> Result<String> {
    name_of(root, "group", gid)
}

pub fn uid(root: &Path, user: &str) -> Result<u32> {
    lookup(root, "passwd", user)
}

pub fn gid(root: &Path, group: &str) -> Result<u32> {
    lookup(root, "group", group)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_names_from_the_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("etc")).unwrap();
        std::fs::write(
            dir.path().join("etc/passwd"),
            "root:x:0:0::/root:/bin/sh\nnova:x:64060:64060::/var/lib/nova:/bin/sh\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("etc/group"), "root:x:0:\nnova:x:64061:\n").unwrap();
        assert_eq!(uid(dir.path(), "nova").unwrap(), 64060);
        assert_eq!(gid(dir.path(), "nova").unwrap(), 64061);
        assert_eq!(uid(dir.path(), "42").unwrap(), 42);
        assert_eq!(user_name(dir.path(), 64060).unwrap(), "nova");
        assert_eq!(group_name(dir.path(), 64061).unwrap(), "nova");
        assert_eq!(user_name(dir.path(), 7).unwrap(), "7");
        let err = uid(dir.path(), "glance").unwrap_err();
        assert!(format!("{err:#}").contains("user \"glance\" does not exist"));
    }
}
