//! What an install or upgrade would change, from apt's own simulation
//! (`apt-get -s`): each package with the version it has and the one it
//! would get, or its removal. apt resolves, dcn only reads the answer.
//! And which versions the sources have of a package (`apt-cache policy`).

use std::collections::{BTreeMap, BTreeSet};

/// One package a simulated run would change.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageChange {
    pub package: String,
    /// The installed version; none for a package new to the host.
    pub from: Option<String>,
    /// The version it would get; none for a removal.
    pub to: Option<String>,
}

impl PackageChange {
    /// `name 1.0 → 1.1`, `name (new) 1.1`, `name 1.0 (removed)`.
    pub fn line(&self) -> String {
        match (&self.from, &self.to) {
            (Some(f), Some(t)) => format!("{} {f} → {t}", self.package),
            (None, Some(t)) => format!("{} (new) {t}", self.package),
            (Some(f), None) => format!("{} {f} (removed)", self.package),
            (None, None) => self.package.clone(),
        }
    }
}

/// The changes in `apt-get -s` output: `Inst name [old] (new origin
/// [arch])` and `Remv name [old]` lines; everything else is apt talking.
pub fn parse_simulation(out: &str) -> Vec<PackageChange> {
    let mut changes: Vec<PackageChange> = Vec::new();
    for line in out.lines() {
        let (kind, rest) = match line.split_once(' ') {
            Some((k @ ("Inst" | "Remv"), rest)) => (k, rest),
            _ => continue,
        };
        let Some(package) = rest.split_whitespace().next() else {
            continue;
        };
        let rest = rest[package.len()..].trim_start();
        let from = rest
            .strip_prefix('[')
            .and_then(|r| r.split_once(']'))
            .map(|(v, _)| v.to_string());
        let to = match kind {
            "Inst" => rest
                .split_once('(')
                .and_then(|(_, r)| r.split_whitespace().next())
                .map(str::to_string),
            _ => None,
        };
        if kind == "Inst" && to.is_none() {
            continue;
        }
        changes.push(PackageChange {
            package: package.to_string(),
            from,
            to,
        });
    }
    changes.sort_by(|a, b| a.package.cmp(&b.package));
    changes.dedup_by(|a, b| a.package == b.package);
    changes
}

/// The versions `apt-cache policy` shows for each package that come from
/// a source (not only from dpkg's status file, which lists what is
/// installed whether a source still has it or not). A package the
/// sources do not know prints nothing and is left out.
pub fn parse_policy(out: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut package: Option<String> = None;
    let mut version: Option<String> = None;
    for line in out.lines() {
        if !line.starts_with(' ') {
            package = line
                .strip_suffix(':')
                .filter(|n| !n.contains(' '))
                .map(str::to_string);
            version = None;
            continue;
        }
        // A version line: ` *** 1.0-1 500` or `     1.0-1 500`; its
        // origins follow, indented further: `        500 file:/srv ./ Packages`.
        let indent = line.len() - line.trim_start().len();
        let words: Vec<&str> = line.split_whitespace().collect();
        if line.starts_with(" *** ") || indent == 5 {
            version = match words.as_slice() {
                ["***", v, _] | [v, _] => Some(v.to_string()),
                _ => None,
            };
        } else if indent >= 8
            && let (Some(p), Some(v), [_, origin, ..]) = (&package, &version, words.as_slice())
            && *origin != "/var/lib/dpkg/status"
        {
            found.entry(p.clone()).or_default().insert(v.clone());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_which_versions_the_sources_have() {
        let out = "\
libc6:
  Installed: 2.36-9+deb12u14
  Candidate: 2.36-9+deb12u14
  Version table:
 *** 2.36-9+deb12u14 100
        100 /var/lib/dpkg/status
libssl3:
  Installed: 3.0.20-1~deb12u2
  Candidate: 3.0.22-1~deb12u2
  Version table:
     3.0.22-1~deb12u2 500
        500 file:/srv/dcn-repo ./ Packages
 *** 3.0.20-1~deb12u2 100
        100 /var/lib/dpkg/status
python3-nova:
  Installed: 2:26.2.2-1~deb12u5
  Candidate: 2:26.2.2-1~deb12u6
  Version table:
     2:26.2.2-1~deb12u6 500
        500 file:/srv/dcn-repo ./ Packages
 *** 2:26.2.2-1~deb12u5 500
        500 file:/srv/dcn-repo ./ Packages
        100 /var/lib/dpkg/status
grub-pc-bin:
  Installed: (none)
  Candidate: (none)
  Version table:
";
        let found = parse_policy(out);
        assert!(!found.contains_key("libc6"), "only dpkg knows it");
        assert!(!found.contains_key("grub-pc-bin"));
        assert_eq!(
            found["libssl3"].iter().collect::<Vec<_>>(),
            ["3.0.22-1~deb12u2"]
        );
        assert_eq!(found["python3-nova"].len(), 2, "{found:?}");
        assert_eq!(found.len(), 2);
    }

    #[test]
    fn reads_upgrades_new_packages_and_removals_from_apt() {
        let out = "\
Reading package lists...
Building dependency tree...
Calculating upgrade...
The following packages will be upgraded:
  memcached
1 upgraded, 1 newly installed, 1 to remove and 0 not upgraded.
Remv old-thing [0.9-1]
Inst memcached [1.6.18-1] (1.6.18-1+dcn1 localhost [amd64])
Inst libfoo1 (2.0-1 Debian:12.8/stable [amd64])
Conf memcached (1.6.18-1+dcn1 localhost [amd64])
Conf libfoo1 (2.0-1 Debian:12.8/stable [amd64])
";
        let c = parse_simulation(out);
        assert_eq!(
            c.iter().map(PackageChange::line).collect::<Vec<_>>(),
            vec![
                "libfoo1 (new) 2.0-1",
                "memcached 1.6.18-1 → 1.6.18-1+dcn1",
                "old-thing 0.9-1 (removed)",
            ]
        );
        assert!(parse_simulation("0 upgraded, 0 newly installed\n").is_empty());
    }
}
