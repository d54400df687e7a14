//! A flat apt repository's index (`Packages`): one stanza per `.deb`, its
//! control fields followed by where the file is, how large and its
//! SHA-256. The control plane writes one for the edge release it serves;
//! a node reads it to know which files to fetch and what each must hash
//! to, and apt reads it to resolve an upgrade.

use anyhow::{Result, bail};
use std::collections::BTreeMap;

/// The largest index a node accepts (Debian's whole main archive is about
/// 50 MB; an edge release's, about 2 MB).
pub const MAX_INDEX: u64 = 32 * 1024 * 1024;

/// One package of an index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    pub package: String,
    pub version: String,
    pub architecture: String,
    /// The file's name in the repository's folder (a flat repository:
    /// no folders).
    pub filename: String,
    pub size: u64,
    /// Lowercase hex.
    pub sha256: String,
}

/// The stanza of one `.deb`: its control fields as `dpkg-deb -f FILE`
/// prints them, then `Filename`, `Size` and `SHA256` (replacing any the
/// control text had).
pub fn stanza(control: &str, filename: &str, size: u64, sha256: &str) -> String {
    let mut out = String::new();
    let mut skipping = false;
    for line in control.trim_end().lines() {
        if line.starts_with([' ', '\t']) {
            if !skipping {
                out.push_str(line);
                out.push('\n');
            }
            continue;
        }
        skipping = matches!(
            line.split_once(':').map(|(k, _)| k),
            Some("Filename" | "Size" | "SHA256" | "MD5sum" | "SHA1")
        ) || line.trim().is_empty();
        if !skipping {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push_str(&format!(
        "Filename: {filename}\nSize: {size}\nSHA256: {sha256}\n"
    ));
    out
}

/// An index's packages by file name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PackageIndex {
    pub by_file: BTreeMap<String, IndexEntry>,
}

impl PackageIndex {
    /// Read an index. Every stanza must name its package, version,
    /// architecture, a plain file name (no folder, nothing that leaves the
    /// repository), its size and SHA-256; a file named twice is refused.
    pub fn parse(text: &str) -> Result<PackageIndex> {
        let mut index = PackageIndex::default();
        for (i, stanza) in text.split("\n\n").enumerate() {
            if stanza.trim().is_empty() {
                continue;
            }
            let f = super::installed::fields(stanza);
            let get = |k: &str| -> Result<String> {
                match f.get(k) {
                    Some(v) if !v.is_empty() => Ok(v.clone()),
                    _ => bail!("stanza {} of the package index has no {k}", i + 1),
                }
            };
            let filename = get("Filename")?;
            if !crate::wire::is_release_file_name(&filename) || !filename.ends_with(".deb") {
                bail!(
                    "stanza {} of the package index names the file {:?}, which is not a plain .deb file name",
                    i + 1,
                    crate::terminal_text::head(&filename, 100)
                );
            }
            let sha256 = get("SHA256")?;
            if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                bail!("stanza {} of the package index has no valid SHA256", i + 1);
            }
            let size = get("Size")?.parse::<u64>().map_err(|_| {
                anyhow::anyhow!("stanza {} of the package index has no valid Size", i + 1)
            })?;
            let entry = IndexEntry {
                package: get("Package")?,
                version: get("Version")?,
                architecture: get("Architecture")?,
                filename: filename.clone(),
                size,
                sha256: sha256.to_ascii_lowercase(),
            };
            if index.by_file.insert(filename.clone(), entry).is_some() {
                bail!("the package index names {filename} twice");
            }
        }
        Ok(index)
    }

    /// The entry of `package` at `version`.
    pub fn find(&self, package: &str, version: &str) -> Option<&IndexEntry> {
        self.by_file
            .values()
            .find(|e| e.package == package && e.version == version)
    }

    /// Each package's version (the last one listed, if several).
    pub fn versions(&self) -> BTreeMap<&str, &str> {
        (self.by_file.values())
            .map(|e| (e.package.as_str(), e.version.as_str()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONTROL: &str = "Package: memcached\nVersion: 1.6.18-1\nArchitecture: amd64\nDepends: libc6 (>= 2.34),\n libevent-2.1-7 (>= 2.1.8)\nDescription: cache\n line two\nSize: 1\n";

    #[test]
    fn a_stanza_is_the_control_text_with_where_the_file_is() {
        let s = stanza(
            CONTROL,
            "memcached_1.6.18-1_amd64.deb",
            123,
            &"a".repeat(64),
        );
        assert!(s.starts_with("Package: memcached\n"), "{s}");
        assert!(s.contains("Depends: libc6 (>= 2.34),\n libevent-2.1-7 (>= 2.1.8)\n"));
        assert!(s.contains("Size: 123\n") && !s.contains("Size: 1\n"), "{s}");
        let index = PackageIndex::parse(&format!(
            "{s}\n{}",
            stanza(
                "Package: libc6\nVersion: 2.36-9\nArchitecture: amd64\n",
                "libc6_2.36-9_amd64.deb",
                9,
                &"B".repeat(64),
            )
        ))
        .unwrap();
        assert_eq!(index.by_file.len(), 2);
        let e = index.find("memcached", "1.6.18-1").unwrap();
        assert_eq!(
            (e.size, e.filename.as_str()),
            (123, "memcached_1.6.18-1_amd64.deb")
        );
        assert_eq!(
            index.find("libc6", "2.36-9").unwrap().sha256,
            "b".repeat(64)
        );
        assert_eq!(index.versions()["libc6"], "2.36-9");
    }

    #[test]
    fn an_index_that_names_files_outside_the_repository_is_refused() {
        let good = "a".repeat(64);
        for (file, size, sha) in [
            ("../../etc/passwd.deb", "1", good.as_str()),
            ("pool/x.deb", "1", good.as_str()),
            ("x.tar", "1", good.as_str()),
            ("x.deb", "-1", good.as_str()),
            ("x.deb", "1", "abc"),
        ] {
            let text = format!(
                "Package: x\nVersion: 1\nArchitecture: all\nFilename: {file}\nSize: {size}\nSHA256: {sha}\n"
            );
            let e = PackageIndex::parse(&text).unwrap_err().to_string();
            assert!(e.contains("stanza 1"), "{file}: {e}");
        }
        let one = format!(
            "Package: x\nVersion: 1\nArchitecture: all\nFilename: x.deb\nSize: 1\nSHA256: {good}\n"
        );
        let e = PackageIndex::parse(&format!("{one}\n{one}")).unwrap_err();
        assert!(e.to_string().contains("twice"), "{e}");
        let e = PackageIndex::parse("Package: x\nVersion: 1\n").unwrap_err();
        assert!(e.to_string().contains("no Filename"), "{e}");
    }
}
