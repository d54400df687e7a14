//! `dcn lab publish`: put Debian packages into the lab's package source, as
//! an operator adds them to the local repository their control plane
//! installs from. They land in the lab's own layer over the cached
//! repository (the cache stays as apt made it), the index is made again,
//! and every lab host's next `apt-get update` sees them.

use super::state::LabState;
use super::{absolute, repo, require_root};
use crate::host::{Cmd, FileSpec, Files, Runner, SystemRunner};
use anyhow::{Context, Result, bail};
use std::path::Path;

/// The largest package the lab takes (the biggest in Debian's OpenStack
/// set is well under this).
const MAX_DEB: u64 = 512 * 1024 * 1024;

/// One published package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    pub package: String,
    pub version: String,
    pub architecture: String,
}

/// Publish `debs` to the lab in `dir`. Each must be a Debian package
/// (dpkg-deb reads its name, version and architecture); nothing is
/// published unless all are.
pub fn publish(dir: &Path, debs: &[std::path::PathBuf]) -> Result<Vec<Published>> {
    require_root()?;
    let (files, dir) = (Files::new("/", false), absolute(dir)?);
    let state = LabState::load(&files, &dir)?
        .with_context(|| format!("no lab in {}; start one with `dcn lab up`", dir.display()))?;
    if state.repo.as_os_str().is_empty() || !state.repo.starts_with(&dir) {
        bail!(
            "the lab in {} binds the shared package cache, not a repository of its own (it came up with an older dcn): run `dcn lab down` and `dcn lab up` again",
            dir.display()
        );
    }
    let runner = SystemRunner::new(false);
    let mut read = Vec::new();
    for deb in debs {
        let size = std::fs::metadata(deb)
            .with_context(|| format!("reading {}", deb.display()))?
            .len();
        if size > MAX_DEB {
            bail!(
                "{} is {size} bytes, over the {MAX_DEB} the lab takes",
                deb.display()
            );
        }
        read.push((deb, fields(&runner, deb)?));
    }
    let mut published = Vec::new();
    for (deb, p) in read {
        let name = format!(
            "{}_{}_{}.deb",
            p.package,
            p.version.replace(':', "%3a"),
            p.architecture
        );
        let bytes = std::fs::read(deb).with_context(|| format!("reading {}", deb.display()))?;
        files.write(state.repo.join(&name), &bytes, &FileSpec::public())?;
        tracing::info!("published {name}");
        published.push(p);
    }
    repo::reindex(&runner, &files, &state.repo)?;
    Ok(published)
}

/// A package's name, version and architecture, or an error naming the
/// file when it is not a Debian package.
fn fields(runner: &dyn Runner, deb: &Path) -> Result<Published> {
    let out = runner
        .run(
            &Cmd::new(format!("reading {}", deb.display()), "dpkg-deb")
                .args([
                    "--showformat=${Package}\\n${Version}\\n${Architecture}\\n",
                    "--show",
                ])
                .arg(deb.display().to_string())
                .read_only(),
        )
        .with_context(|| {
            format!(
                "{} is not a Debian package dpkg-deb can read",
                deb.display()
            )
        })?;
    let parsed = parse_fields(&out.stdout).with_context(|| {
        format!(
            "{} is not a Debian package dpkg-deb can read",
            deb.display()
        )
    })?;
    Ok(parsed)
}

/// `name\nversion\narch\n`, each of the characters Debian allows.
fn parse_fields(text: &str) -> Result<Published> {
    let lines: Vec<&str> = text.lines().collect();
    let [package, version, architecture] = lines[..] else {
        bail!("dpkg-deb gave {} lines, not 3", lines.len());
    };
    let ok = |s: &str, extra: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || extra.contains(c))
    };
    if !ok(package, "+-.") || !ok(version, "+-.~:") || !ok(architecture, "-") {
        bail!("its name, version or architecture has characters Debian does not allow");
    }
    Ok(Published {
        package: package.into(),
        version: version.into(),
        architecture: architecture.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packages_fields_are_checked_before_they_name_a_file() {
        let p = parse_fields("memcached\n1.6.18-1+deb12u1+dcn1\namd64\n").unwrap();
        assert_eq!(p.package, "memcached");
        assert_eq!(p.version, "1.6.18-1+deb12u1+dcn1");
        assert!(parse_fields("../../etc\n1\namd64\n").is_err());
        assert!(parse_fields("a\n1\n").is_err());
        assert!(parse_fields("a\n1/2\namd64\n").is_err());
    }
}
