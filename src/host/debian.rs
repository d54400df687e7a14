//! The Debian archive as the build host sees it: the host's apt sources
//! (one-line `.list` and deb822 `.sources`) as one deb822 text, the mirror
//! that serves a suite, and debootstrap of a base tree from it. The lab's
//! containers and the edge image are both made this way.

use super::command::{Cmd, Runner};
use super::read::ReadSpec;
use anyhow::{Result, bail};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The host's apt sources, as one deb822 text.
pub fn host_sources() -> Result<String> {
    host_sources_in(Path::new("/etc/apt"))
}

/// The apt sources under `etc_apt` (`sources.list`, `sources.list.d/*.list`
/// and `*.sources`), as one deb822 text.
pub fn host_sources_in(etc_apt: &Path) -> Result<String> {
    let mut out = String::new();
    let read = |p: &Path| super::read::read_string(p, &ReadSpec::up_to(super::read::MAX_STATE));
    if let Ok(t) = read(&etc_apt.join("sources.list")) {
        out.push_str(&one_line_as_deb822(&t));
    }
    if let Ok(dir) = std::fs::read_dir(etc_apt.join("sources.list.d")) {
        let mut paths: Vec<PathBuf> = dir.flatten().map(|e| e.path()).collect();
        paths.sort();
        for p in paths {
            let Ok(t) = read(&p) else {
                continue;
            };
            match p.extension().and_then(|e| e.to_str()) {
                Some("list") => out.push_str(&one_line_as_deb822(&t)),
                Some("sources") => {
                    out.push_str(t.trim_end());
                    out.push_str("\n\n");
                }
                _ => {}
            }
        }
    }
    if out.is_empty() {
        bail!(
            "the host has no apt sources to build from; add a Debian mirror to /etc/apt/sources.list"
        );
    }
    Ok(out)
}

/// `deb [opts] URI SUITE COMPONENTS...` lines as deb822 paragraphs.
fn one_line_as_deb822(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let mut w = line.split_whitespace();
        if w.next() != Some("deb") {
            continue;
        }
        let words: Vec<&str> = w.filter(|x| !x.starts_with('[')).collect();
        if words.len() >= 3 {
            out.push_str(&format!(
                "Types: deb\nURIs: {}\nSuites: {}\nComponents: {}\n\n",
                words[0],
                words[1],
                words[2..].join(" ")
            ));
        }
    }
    out
}

/// The first mirror in `sources` (deb822) of type deb that serves `suite`.
pub fn mirror_for(sources: &str, suite: &str) -> Result<String> {
    for para in sources.split("\n\n") {
        let field = |name: &str| {
            para.lines()
                .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_string()))
        };
        let is_deb = field("Types:").is_none_or(|t| t.split_whitespace().any(|x| x == "deb"));
        if is_deb
            && field("Suites:").is_some_and(|s| s.split_whitespace().any(|x| x == suite))
            && let Some(uri) =
                field("URIs:").and_then(|u| u.split_whitespace().next().map(String::from))
        {
            return Ok(uri);
        }
    }
    bail!("the host's apt sources list no mirror for {suite}; add one to /etc/apt/sources.list")
}

/// A minimal base tree of `suite` from the host's mirror.
pub struct Debootstrap<'a> {
    pub suite: &'a str,
    /// Packages added to debootstrap's minimal set.
    pub include: &'a [String],
    pub target: &'a Path,
    /// Where downloaded .debs are kept across builds.
    pub cache_dir: Option<&'a Path>,
}

impl Debootstrap<'_> {
    pub fn command(&self, mirror: &str) -> Cmd {
        Cmd::new(
            format!("creating a Debian {} base tree (debootstrap)", self.suite),
            "debootstrap",
        )
        .args(["--variant=minbase", "--merged-usr"])
        .arg(format!("--include={}", self.include.join(",")))
        .args(
            self.cache_dir
                .map(|d| format!("--cache-dir={}", d.display())),
        )
        .arg(self.suite)
        .arg(self.target.display().to_string())
        .arg(mirror)
        .timeout(Duration::from_secs(3600))
    }

    /// Run it from the host's mirror for the suite.
    pub fn run(&self, runner: &dyn Runner) -> Result<()> {
        let mirror = mirror_for(&host_sources()?, self.suite)?;
        runner.run(&self.command(&mirror))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_and_deb822_sources_become_one_text_with_the_suites_mirror() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("sources.list.d")).unwrap();
        std::fs::write(
            d.path().join("sources.list"),
            "# c\ndeb [arch=amd64] http://sec.test/d bookworm-security main\ndeb-src http://src.test/d bookworm main\n",
        )
        .unwrap();
        std::fs::write(
            d.path().join("sources.list.d/b.sources"),
            "Types: deb\nURIs: http://m.test/d\nSuites: bookworm bookworm-updates\nComponents: main\n",
        )
        .unwrap();
        std::fs::write(
            d.path().join("sources.list.d/c.list"),
            "deb http://t.test/d trixie main\n",
        )
        .unwrap();
        std::fs::write(
            d.path().join("sources.list.d/ignored.save"),
            "deb http://x y z\n",
        )
        .unwrap();
        let text = host_sources_in(d.path()).unwrap();
        assert_eq!(mirror_for(&text, "bookworm").unwrap(), "http://m.test/d");
        assert_eq!(mirror_for(&text, "trixie").unwrap(), "http://t.test/d");
        assert!(!text.contains("src.test") && !text.contains("http://x"));
        let err = mirror_for(&text, "sid").unwrap_err().to_string();
        assert!(err.contains("no mirror for sid"), "{err}");
        let empty = tempfile::tempdir().unwrap();
        assert!(host_sources_in(empty.path()).is_err());
    }

    #[test]
    fn debootstrap_is_minimal_with_the_includes_and_cache() {
        let include = vec!["systemd".to_string(), "dbus".to_string()];
        let cmd = Debootstrap {
            suite: "bookworm",
            include: &include,
            target: Path::new("/c/base.partial"),
            cache_dir: Some(Path::new("/c/debs")),
        }
        .command("http://m.test/d");
        assert_eq!(
            cmd.command_line(),
            "debootstrap --variant=minbase --merged-usr --include=systemd,dbus --cache-dir=/c/debs bookworm /c/base.partial http://m.test/d"
        );
    }
}
