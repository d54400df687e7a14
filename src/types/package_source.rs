//! `packages.source`: where a host's packages come from, `mirror` or a
//! local apt repository folder.

use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// Where packages come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum PackageSource {
    /// The apt sources the host already has (a Debian mirror).
    Mirror,
    /// A local apt repository folder (a flat repository with a `Packages`
    /// index), for disconnected sites.
    Local(std::path::PathBuf),
}

impl TryFrom<String> for PackageSource {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        if s == "mirror" {
            return Ok(PackageSource::Mirror);
        }
        match s.strip_prefix("local:") {
            Some(p) if p.starts_with('/') => {
                check_repository_path(p)?;
                Ok(PackageSource::Local(p.into()))
            }
            _ => Err(format!(
                "invalid package source {s:?}: use `mirror` or `local:/absolute/path/to/repository`"
            )),
        }
    }
}

/// The folder becomes part of a one-line apt source, `deb [trusted=yes]
/// file:<path> ./`: a newline would add a source line of its own, and a space
/// or `#` would change the line's meaning. So it is one plain path.
fn check_repository_path(p: &str) -> Result<(), String> {
    const MAX: usize = 1024;
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._+-~:@,=".contains(c);
    if p.len() > MAX {
        return Err(format!(
            "invalid package source: the repository path is longer than {MAX} characters"
        ));
    }
    match p.chars().find(|&c| !plain(c)) {
        None => Ok(()),
        Some(c) => Err(format!(
            "invalid package source {:?}: the repository path may hold only letters, digits and / . _ + - ~ : @ , =, not {c:?}, because it is written into an apt sources line; move or link the repository to a plain path",
            format!("local:{p}")
        )),
    }
}

impl FromStr for PackageSource {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::try_from(s.to_string())
    }
}

impl From<PackageSource> for String {
    fn from(p: PackageSource) -> String {
        match p {
            PackageSource::Mirror => "mirror".into(),
            PackageSource::Local(path) => format!("local:{}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources() {
        assert_eq!(
            PackageSource::try_from("mirror".to_string()),
            Ok(PackageSource::Mirror)
        );
        assert!(PackageSource::try_from("local:relative".to_string()).is_err());
        assert_eq!(
            PackageSource::try_from("local:/srv/repo-1.2_x+y".to_string()).unwrap(),
            PackageSource::Local("/srv/repo-1.2_x+y".into())
        );
        for bad in [
            "local:/srv/repo\ndeb [trusted=yes] http://evil/ ./",
            "local:/srv/repo ./",
            "local:/srv/repo\r",
            "local:/srv/#repo",
            "local:/srv/répo",
            "local:/srv/\u{1b}[2J",
        ] {
            let e = PackageSource::try_from(bad.to_string()).unwrap_err();
            assert!(
                e.contains("written into an apt sources line"),
                "{bad:?}: {e}"
            );
        }
        let long = format!("local:/{}", "a".repeat(1024));
        assert!(
            PackageSource::try_from(long)
                .unwrap_err()
                .contains("longer than 1024")
        );
    }
}
