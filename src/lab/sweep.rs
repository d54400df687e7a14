//! What a lab has on this machine, found by what it is rather than by what
//! `DIR/lab.json` recorded: its containers (systemd-nspawn processes whose
//! root directory lies under `DIR/hosts/`), the mounts under `DIR`, and the
//! lab's network namespaces. `dcn lab down` removes these too, so a
//! container an interrupted command started and never recorded does not
//! outlive the lab.

use super::{container, procfs};
use crate::host::Files;
use anyhow::Result;
use std::path::{Path, PathBuf};

/// A lab container found running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Its `--machine=` name: the lab host it is.
    pub machine: String,
    pub nspawn: u32,
    /// Its systemd, when it has one yet.
    pub init: Option<u32>,
}

/// The lab containers of `dir` that run now.
pub fn containers(files: &Files, dir: &Path) -> Result<Vec<Found>> {
    let hosts = format!(
        "--directory={}/",
        canonical(files, dir).join("hosts").display()
    );
    let mut found = Vec::new();
    for pid in procfs::pids()? {
        let Some(cmdline) = procfs::read(pid, "cmdline") else {
            continue;
        };
        if let Some(machine) = lab_machine(&cmdline, &hosts)
            && container::alive(pid)
        {
            found.push(Found {
                machine,
                nspawn: pid,
                init: container::find_init(pid),
            });
        }
    }
    found.sort_by_key(|f| f.nspawn);
    Ok(found)
}

/// The machine name of a systemd-nspawn command line whose directory is
/// under `hosts_arg` (`--directory=<dir>/hosts/`), else `None`.
fn lab_machine(cmdline: &[u8], hosts_arg: &str) -> Option<String> {
    let args: Vec<&str> = cmdline
        .split(|b| *b == 0)
        .filter_map(|a| std::str::from_utf8(a).ok())
        .collect();
    let program = args.first()?;
    if !program.ends_with("systemd-nspawn") {
        return None;
    }
    args.iter().find(|a| a.starts_with(hosts_arg))?;
    args.iter()
        .find_map(|a| a.strip_prefix("--machine="))
        .map(String::from)
}

/// `nsenter` processes that entered the container whose systemd was
/// `init` (`dcn lab exec`, the lab's own commands). When a container
/// stops while one runs, util-linux's nsenter stops itself along with its
/// stopped child and is never woken again, holding the lab's network
/// namespace: after the container is gone, these are left-overs.
pub fn nsenters(init: u32) -> Vec<u32> {
    let target = init.to_string();
    procfs::pids()
        .unwrap_or_default()
        .into_iter()
        .filter(|pid| procfs::read(*pid, "cmdline").is_some_and(|c| entered(&c, &target)))
        .collect()
}

/// Whether a command line is `nsenter -t TARGET …`.
fn entered(cmdline: &[u8], target: &str) -> bool {
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    args.first().is_some_and(|p| p.ends_with(b"nsenter"))
        && args
            .windows(2)
            .any(|w| w[0] == b"-t" && w[1] == target.as_bytes())
}

/// Mount points at or under `dir`, deepest first (the order to unmount).
pub fn mounts(files: &Files, dir: &Path) -> Result<Vec<PathBuf>> {
    let text = procfs::mountinfo()?;
    Ok(mounts_under(&text, &canonical(files, dir)))
}

fn mounts_under(mountinfo: &str, dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = mountinfo
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(unescape)
        .map(PathBuf::from)
        .filter(|p| p.starts_with(dir))
        .collect();
    found.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    found.dedup();
    found
}

/// mountinfo writes space, tab, newline and backslash as octal escapes.
fn unescape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let code = rest
            .get(i + 1..i + 4)
            .and_then(|d| u8::from_str_radix(d, 8).ok());
        match code {
            Some(c) => {
                out.push(c as char);
                rest = &rest[i + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// `dir` as the mount table and nspawn's arguments name it: its links
/// resolved.
fn canonical(files: &Files, dir: &Path) -> PathBuf {
    files
        .canonicalize(dir)
        .unwrap_or_else(|_| dir.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lab_containers_are_known_by_their_directory_and_name() {
        let line = |args: &[&str]| args.join("\0").into_bytes();
        let hosts = "--directory=/var/lib/dcn-lab/hosts/";
        assert_eq!(
            lab_machine(
                &line(&[
                    "systemd-nspawn",
                    "--quiet",
                    "--machine=edge1",
                    "--directory=/var/lib/dcn-lab/hosts/edge1/rootfs",
                ]),
                hosts
            ),
            Some("edge1".into())
        );
        for other in [
            line(&[
                "systemd-nspawn",
                "--machine=x",
                "--directory=/srv/other/rootfs",
            ]),
            line(&[
                "bash",
                "--machine=edge1",
                "--directory=/var/lib/dcn-lab/hosts/edge1/rootfs",
            ]),
            line(&["systemd-nspawn", "--directory=/var/lib/dcn-lab/hosts-old/x"]),
        ] {
            assert_eq!(lab_machine(&other, hosts), None);
        }
    }

    #[test]
    fn nsenters_of_a_container_are_known_by_its_init() {
        let line = |args: &[&str]| args.join("\0").into_bytes();
        assert!(entered(
            &line(&["nsenter", "-t", "1929", "-a", "--", "dcn"]),
            "1929"
        ));
        assert!(entered(
            &line(&["/usr/bin/nsenter", "-t", "1929", "-a"]),
            "1929"
        ));
        assert!(!entered(&line(&["nsenter", "-t", "19290", "-a"]), "1929"));
        assert!(!entered(&line(&["dcn", "-t", "1929"]), "1929"));
    }

    #[test]
    fn mounts_under_the_lab_are_listed_deepest_first() {
        let info = "\
22 1 8:1 / / rw - ext4 /dev/vda rw
90 22 0:50 / /var/lib/dcn-lab/hosts/cp/rootfs rw - overlay overlay rw
91 90 0:51 / /var/lib/dcn-lab/hosts/cp/rootfs/proc rw - proc proc rw
92 22 0:52 / /var/lib/dcn-lab/hosts/my\\040host/rootfs rw - overlay overlay rw
93 22 0:53 / /var/lib/dcn-lab-other rw - tmpfs tmpfs rw
";
        assert_eq!(
            mounts_under(info, Path::new("/var/lib/dcn-lab")),
            vec![
                PathBuf::from("/var/lib/dcn-lab/hosts/cp/rootfs/proc"),
                PathBuf::from("/var/lib/dcn-lab/hosts/cp/rootfs"),
                PathBuf::from("/var/lib/dcn-lab/hosts/my host/rootfs"),
            ]
        );
    }
}
