//! What dpkg has installed, read from its status file: each package's
//! version and what it depends on, so a service's code can be traced from
//! the packages its recipe names down to the libraries under them (the
//! closure), and when dpkg last unpacked each of them.
//!
//! A unit whose start came before a package of its closure was unpacked
//! runs code that is no longer on the disk (a library, a Python module):
//! that is how `dcn upgrade` knows what to restart, from the host alone,
//! also after a run that stopped half-way.

use crate::host::Files;
use crate::host::read::ReadSpec;
use anyhow::{Context as _, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;

/// dpkg's database of installed packages.
pub const STATUS_FILE: &str = "/var/lib/dpkg/status";
/// Where dpkg keeps each package's file list (rewritten at each unpack).
const INFO_DIR: &str = "/var/lib/dpkg/info";
/// A host with thousands of packages has a status file of a few MB.
const MAX_STATUS: u64 = 64 * 1024 * 1024;

/// One installed package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    pub version: String,
    pub architecture: String,
    /// Names this package depends on (Depends and Pre-Depends, every
    /// alternative), without versions or architecture qualifiers.
    pub depends: Vec<String>,
    /// Virtual package names it provides.
    pub provides: Vec<String>,
}

/// The installed packages, by name.
#[derive(Debug, Clone, Default)]
pub struct InstalledSet {
    pub packages: BTreeMap<String, Installed>,
    /// Virtual name → the installed packages that provide it.
    providers: BTreeMap<String, Vec<String>>,
}

impl InstalledSet {
    /// Read dpkg's status file on `files`' host.
    pub fn read(files: &Files) -> Result<InstalledSet> {
        let text = files
            .read_string_with(STATUS_FILE, &ReadSpec::up_to(MAX_STATUS))?
            .with_context(|| format!("{STATUS_FILE} is missing: is this a Debian host?"))?;
        Ok(InstalledSet::parse(&text))
    }

    /// Parse a status file: only packages dpkg calls installed count.
    pub fn parse(text: &str) -> InstalledSet {
        let mut set = InstalledSet::default();
        for stanza in text.split("\n\n") {
            let fields = fields(stanza);
            let (Some(name), Some(status), Some(version)) = (
                fields.get("Package"),
                fields.get("Status"),
                fields.get("Version"),
            ) else {
                continue;
            };
            if !status.ends_with(" installed") {
                continue;
            }
            let mut depends = Vec::new();
            for key in ["Pre-Depends", "Depends"] {
                depends.extend(fields.get(key).map(|d| names(d)).unwrap_or_default());
            }
            let provides = fields.get("Provides").map(|d| names(d)).unwrap_or_default();
            for p in &provides {
                set.providers
                    .entry(p.clone())
                    .or_default()
                    .push(name.clone());
            }
            set.packages.insert(
                name.clone(),
                Installed {
                    version: version.clone(),
                    architecture: fields.get("Architecture").cloned().unwrap_or_default(),
                    depends,
                    provides,
                },
            );
        }
        set
    }

    /// `roots` and every installed package they depend on, directly or
    /// not (virtual names resolved to their installed providers). Roots
    /// that are not installed are left out.
    pub fn closure<'a>(&self, roots: impl IntoIterator<Item = &'a str>) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<String> = roots.into_iter().map(str::to_string).collect();
        while let Some(name) = todo.pop() {
            let real: Vec<String> = match self.packages.contains_key(&name) {
                true => vec![name],
                false => self.providers.get(&name).cloned().unwrap_or_default(),
            };
            for r in real {
                if seen.insert(r.clone()) {
                    todo.extend(self.packages[&r].depends.iter().cloned());
                }
            }
        }
        seen
    }

    /// The version of each of `names` that is installed.
    pub fn versions<'a>(
        &self,
        names: impl IntoIterator<Item = &'a String>,
    ) -> BTreeMap<String, String> {
        names
            .into_iter()
            .filter_map(|n| self.packages.get(n).map(|p| (n.clone(), p.version.clone())))
            .collect()
    }

    /// When dpkg last unpacked `name` (its file list's time), if known.
    pub fn unpacked_at(&self, files: &Files, name: &str) -> Result<Option<SystemTime>> {
        let Some(p) = self.packages.get(name) else {
            return Ok(None);
        };
        // `Multi-Arch: same` packages name theirs `name:arch.list`.
        let qualified = format!("{INFO_DIR}/{name}:{}.list", p.architecture);
        for list in [qualified, format!("{INFO_DIR}/{name}.list")] {
            match std::fs::metadata(files.host_path(&list)?) {
                Ok(m) => return Ok(Some(m.modified()?)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e).with_context(|| format!("reading {list}'s time")),
            }
        }
        Ok(None)
    }

    /// The packages of `closure` that dpkg unpacked after `started`, with
    /// their versions: what a process started then does not run.
    pub fn unpacked_since(
        &self,
        files: &Files,
        closure: &BTreeSet<String>,
        started: SystemTime,
    ) -> Result<Vec<String>> {
        let mut newer = Vec::new();
        for name in closure {
            if self.unpacked_at(files, name)?.is_some_and(|t| t > started) {
                newer.push(name.clone());
            }
        }
        Ok(newer)
    }
}

/// Up to a few of `names`, for a log line: `a, b, c and 12 more`.
pub fn few(names: &[String]) -> String {
    const SHOWN: usize = 4;
    let mut text = names[..names.len().min(SHOWN)].join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    text
}

/// A stanza's fields (continuation lines joined), by name.
pub(super) fn fields(stanza: &str) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    let mut last: Option<String> = None;
    for line in stanza.lines() {
        if line.starts_with([' ', '\t']) {
            if let Some(k) = &last
                && let Some(v) = out.get_mut(k)
            {
                v.push(' ');
                v.push_str(line.trim());
            }
            continue;
        }
        if let Some((k, v)) = line.split_once(':') {
            out.insert(k.to_string(), v.trim().to_string());
            last = Some(k.to_string());
        }
    }
    out
}

/// The package names of a dependency field: `a (>= 1) | b:any, c`.
fn names(field: &str) -> Vec<String> {
    field
        .split([',', '|'])
        .filter_map(|atom| {
            let name = atom.split_whitespace().next()?;
            let name = name.split(':').next()?;
            (!name.is_empty()).then(|| name.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATUS: &str = "\
Package: memcached
Status: install ok installed
Architecture: amd64
Version: 1.6.18-1
Depends: libc6 (>= 2.34), libevent-2.1-7 (>= 2.1.8-stable),
 adduser, lsb-base | sysvinit-utils
Description: a cache

Package: libc6
Status: install ok installed
Architecture: amd64
Multi-Arch: same
Version: 2.36-9+deb12u9

Package: libevent-2.1-7
Status: install ok installed
Architecture: amd64
Multi-Arch: same
Version: 2.1.12-stable-8
Depends: libc6 (>= 2.14)

Package: adduser
Status: install ok installed
Architecture: all
Version: 3.134
Pre-Depends: passwd
Depends: perl-base:any

Package: passwd
Status: install ok installed
Architecture: amd64
Version: 1:4.13+dfsg1-1

Package: perl-base
Status: install ok installed
Architecture: amd64
Version: 5.36.0-7
Provides: perlapi-5.36.0

Package: sysvinit-utils
Status: install ok installed
Architecture: amd64
Version: 3.06-4

Package: lsb-base
Status: deinstall ok config-files
Architecture: all
Version: 11.6

Package: python3-keystone
Status: install ok installed
Architecture: all
Version: 2:22.0.0-2
Depends: perlapi-5.36.0, python3-nope
";

    #[test]
    fn the_closure_follows_depends_pre_depends_alternatives_and_virtual_names() {
        let set = InstalledSet::parse(STATUS);
        let c = set.closure(["memcached"]);
        let want: BTreeSet<String> = [
            "memcached",
            "libc6",
            "libevent-2.1-7",
            "adduser",
            "passwd",
            "perl-base",
            "sysvinit-utils",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        assert_eq!(c, want, "lsb-base is only configuration files: left out");
        // A virtual name resolves to its provider; a missing one to nothing.
        let c = set.closure(["python3-keystone", "not-installed"]);
        assert!(c.contains("perl-base") && c.contains("python3-keystone"));
        assert_eq!(c.len(), 2);
        assert_eq!(set.packages["memcached"].version, "1.6.18-1");
    }

    #[test]
    fn unpacked_since_reads_the_file_lists_times() {
        let dir = tempfile::tempdir().unwrap();
        let files = Files::new(dir.path(), false);
        let info = dir.path().join("var/lib/dpkg/info");
        std::fs::create_dir_all(&info).unwrap();
        let set = InstalledSet::parse(STATUS);
        let old = SystemTime::now() - std::time::Duration::from_secs(3600);
        let started = SystemTime::now() - std::time::Duration::from_secs(60);
        for (list, time) in [
            ("memcached.list", SystemTime::now()),
            ("libc6:amd64.list", old),
            ("libevent-2.1-7:amd64.list", SystemTime::now()),
            ("adduser.list", old),
        ] {
            let f = std::fs::File::create(info.join(list)).unwrap();
            f.set_modified(time).unwrap();
        }
        let closure = set.closure(["memcached"]);
        assert_eq!(
            set.unpacked_since(&files, &closure, started).unwrap(),
            vec!["libevent-2.1-7", "memcached"],
            "packages without a list (passwd here) do not count"
        );
        assert!(
            set.unpacked_since(
                &files,
                &closure,
                SystemTime::now() + std::time::Duration::from_secs(5)
            )
            .unwrap()
            .is_empty()
        );
    }
}
