//! The one place that talks to apt and dpkg: which packages are installed,
//! where packages come from (the host's mirror or a local repository), debconf
//! answers, and installs that start no service (`policy-rc.d` exits 101, so
//! nothing runs before dcn has configured it).

mod changes;
pub mod index;
pub mod installed;

pub use changes::PackageChange;
pub use installed::InstalledSet;

use super::command::{Cmd, Runner};
use super::files::{FileSpec, Files};
use crate::secrets::Secret;
use crate::types::PackageSource;
use anyhow::{Context, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// The policy script that keeps maintainer scripts from starting services.
pub const POLICY_RC_D: &str = "/usr/sbin/policy-rc.d";
/// The apt source list of a local repository.
pub const LOCAL_SOURCE_LIST: &str = "/etc/apt/sources.list.d/dcn-local.list";
/// Installs of a few hundred packages on two cores take minutes.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(45 * 60);

/// One debconf answer: `package question type value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DebconfAnswer {
    pub package: String,
    pub question: String,
    pub kind: String,
    pub value: String,
}

impl DebconfAnswer {
    /// A recipe's `package question type value` line.
    pub fn parse(line: &str) -> Result<DebconfAnswer> {
        let mut w = line.splitn(4, ' ');
        match (w.next(), w.next(), w.next(), w.next()) {
            (Some(p), Some(q), Some(k), Some(v)) => Ok(DebconfAnswer {
                package: p.into(),
                question: q.into(),
                kind: k.into(),
                value: v.into(),
            }),
            _ => anyhow::bail!("debconf line {line:?} is not `package question type value`"),
        }
    }
}

/// Options of every apt-get call: retry a mirror's transient failures, and
/// wait for another apt (unattended upgrades) instead of failing at once.
const APT_OPTIONS: &[&str] = &["-o", "Acquire::Retries=3", "-o", "DPkg::Lock::Timeout=600"];

/// apt and dpkg on a host.
pub struct Apt<'a> {
    runner: &'a dyn Runner,
    files: &'a Files,
    source: PackageSource,
}

impl<'a> Apt<'a> {
    pub fn new(runner: &'a dyn Runner, files: &'a Files, source: PackageSource) -> Self {
        Apt {
            runner,
            files,
            source,
        }
    }

    /// The packages of `wanted` that are not installed.
    pub fn missing(&self, wanted: &[String]) -> Result<Vec<String>> {
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        let out = self.runner.run(
            &Cmd::new("checking which packages are installed", "dpkg-query")
                .args(["-W", "-f=${Package} ${db:Status-Status}\\n"])
                .args(wanted.iter().cloned())
                .read_only()
                .unchecked(),
        )?;
        let installed: Vec<&str> = out
            .stdout
            .lines()
            .filter_map(|l| l.split_once(' '))
            .filter(|(_, status)| *status == "installed")
            .map(|(p, _)| p)
            .collect();
        Ok(wanted
            .iter()
            .filter(|w| !installed.contains(&w.as_str()))
            .cloned()
            .collect())
    }

    /// apt options that restrict apt to the local repository, if that is the
    /// source, so a disconnected site never reaches for a mirror.
    fn source_options(&self) -> Vec<String> {
        match &self.source {
            PackageSource::Mirror => Vec::new(),
            PackageSource::Local(_) => vec![
                "-o".into(),
                format!("Dir::Etc::sourcelist={LOCAL_SOURCE_LIST}"),
                "-o".into(),
                "Dir::Etc::sourceparts=-".into(),
                "-o".into(),
                "APT::Get::List-Cleanup=0".into(),
            ],
        }
    }

    /// Point apt at the configured source and refresh its package lists.
    pub fn update(&self) -> Result<()> {
        if let PackageSource::Local(path) = &self.source {
            let index = self
                .files
                .host_path(format!("{}/Packages", path.display()))?;
            if !index.exists() {
                anyhow::bail!(
                    "{} has no Packages index: a local repository needs the .deb files and a Packages file (e.g. `dpkg-scanpackages . > Packages`)",
                    path.display()
                );
            }
            let line = format!("deb [trusted=yes] file:{} ./\n", path.display());
            self.files
                .write(LOCAL_SOURCE_LIST, line.as_bytes(), &FileSpec::public())?;
        }
        self.runner.run(
            &Cmd::new("refreshing apt's package lists", "apt-get")
                .args(self.source_options())
                .args(APT_OPTIONS.iter().copied())
                .args(["-q", "update"])
                .timeout(Duration::from_secs(600)),
        )?;
        Ok(())
    }

    /// Give debconf its answers before packages ask.
    pub fn preseed(&self, answers: &[DebconfAnswer]) -> Result<()> {
        if answers.is_empty() {
            return Ok(());
        }
        let text: String = answers
            .iter()
            .map(|a| format!("{} {} {} {}\n", a.package, a.question, a.kind, a.value))
            .collect();
        self.runner.run(
            &Cmd::new("preseeding debconf answers", "debconf-set-selections")
                .stdin(Secret::new(text)),
        )?;
        Ok(())
    }

    /// Install `packages` without starting any service, keeping existing
    /// config files. `policy-rc.d` is removed afterwards, also on failure.
    pub fn install(&self, packages: &[String], recommends: bool) -> Result<()> {
        if packages.is_empty() {
            return Ok(());
        }
        let mut args = vec![
            if recommends {
                "--install-recommends"
            } else {
                "--no-install-recommends"
            }
            .to_string(),
        ];
        args.push("install".into());
        args.extend(packages.iter().cloned());
        self.get(format!("installing {} package(s)", packages.len()), args)
    }

    /// Upgrade what is installed (a fresh root filesystem to the mirror's
    /// point releases), starting nothing.
    pub fn upgrade(&self) -> Result<()> {
        self.get(
            "upgrading the installed packages".into(),
            vec!["--no-install-recommends".into(), "dist-upgrade".into()],
        )
    }

    /// What installing `missing` and upgrading everything else would
    /// change, from apt's simulation against the lists it has (read-only;
    /// [`Self::update`] refreshes them).
    pub fn planned_changes(&self, missing: &[String]) -> Result<Vec<PackageChange>> {
        let simulate = |what: &str, args: Vec<String>| -> Result<Vec<PackageChange>> {
            let out = self.runner.run(
                &Cmd::new(what, "apt-get")
                    .args(self.source_options())
                    .args(["-q", "-s", "--no-install-recommends"])
                    .args(args)
                    .read_only()
                    .timeout(Duration::from_secs(300)),
            )?;
            Ok(changes::parse_simulation(&out.stdout))
        };
        let mut all = simulate(
            "asking apt what an upgrade would change",
            vec!["dist-upgrade".into()],
        )?;
        if !missing.is_empty() {
            let mut args = vec!["install".to_string()];
            args.extend(missing.iter().cloned());
            all.extend(simulate("asking apt what installing would change", args)?);
        }
        all.sort_by(|a, b| a.package.cmp(&b.package));
        all.dedup_by(|a, b| a.package == b.package);
        Ok(all)
    }

    /// The versions of each of `names` that the sources have a file of
    /// (not only dpkg's record of an installed one); a name the sources
    /// do not know is left out.
    pub fn versions_in_sources(
        &self,
        names: &[String],
    ) -> Result<BTreeMap<String, BTreeSet<String>>> {
        if names.is_empty() {
            return Ok(BTreeMap::new());
        }
        let out = self.runner.run(
            &Cmd::new("asking apt which versions its sources have", "apt-cache")
                .args(self.source_options())
                .arg("policy")
                .args(names.iter().cloned())
                .read_only()
                .timeout(Duration::from_secs(300)),
        )?;
        Ok(changes::parse_policy(&out.stdout))
    }

    /// What installing `names` on this host would add, each with the
    /// version apt would pick (apt's simulation; nothing changes).
    pub fn would_install(&self, names: &[String]) -> Result<Vec<(String, String)>> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let out = self.runner.run(
            &Cmd::new(
                format!(
                    "asking apt what installing {} package(s) needs",
                    names.len()
                ),
                "apt-get",
            )
            .args(self.source_options())
            .args(["-q", "-s", "--no-install-recommends", "install"])
            .args(names.iter().cloned())
            .read_only()
            .timeout(Duration::from_secs(300)),
        )?;
        Ok(changes::parse_simulation(&out.stdout)
            .into_iter()
            .filter_map(|c| Some((c.package, c.to?)))
            .collect())
    }

    /// The .deb files of `packages` at exactly their versions, from the
    /// source, into `dir` (named as Debian names them:
    /// `name_version_arch.deb`, an epoch's colon written `%3a`).
    pub fn download_versions(
        &self,
        packages: &[(String, String)],
        dir: &std::path::Path,
    ) -> Result<()> {
        for batch in packages.chunks(200) {
            self.runner.run(
                &Cmd::new(
                    format!("downloading {} package file(s)", batch.len()),
                    "apt-get",
                )
                .args(self.source_options())
                .args(APT_OPTIONS.iter().copied())
                .args(["-q", "download"])
                .args(batch.iter().map(|(n, v)| format!("{n}={v}")))
                .cwd(dir)
                .timeout(Duration::from_secs(1800)),
            )?;
        }
        Ok(())
    }

    /// The installed packages a Debian system is made of (priority
    /// `required` or `important`): what a host of the same release has
    /// whatever else it runs.
    pub fn base_system(&self) -> Result<Vec<String>> {
        let out = self.runner.run(
            &Cmd::new("listing the base system's packages", "dpkg-query")
                .args(["-W", "-f=${Package} ${Priority} ${db:Status-Status}\\n"])
                .read_only(),
        )?;
        Ok(out
            .stdout
            .lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                match (w.next(), w.next(), w.next()) {
                    (Some(p), Some("required" | "important"), Some("installed")) => {
                        Some(p.to_string())
                    }
                    _ => None,
                }
            })
            .collect())
    }

    /// Remove `packages` with their config, then what nothing needs any more
    /// (`dcn reset --purge`).
    pub fn purge(&self, packages: &[String]) -> Result<()> {
        let purge = |what: &str, args: Vec<String>| {
            self.runner.run(
                &Cmd::new(what, "apt-get")
                    .env("DEBIAN_FRONTEND", "noninteractive")
                    .args(["-q", "-y"])
                    .args(args)
                    .timeout(Duration::from_secs(1800)),
            )
        };
        let mut args = vec!["purge".to_string()];
        args.extend(packages.iter().cloned());
        purge("purging the packages", args)?;
        purge(
            "removing packages nothing needs any more",
            vec!["autoremove".into(), "--purge".into()],
        )?;
        Ok(())
    }

    /// Drop the downloaded .deb files (a tree about to be shipped).
    pub fn clean(&self) -> Result<()> {
        self.runner.run(
            &Cmd::new("cleaning apt's cache", "apt-get")
                .arg("clean")
                .timeout(Duration::from_secs(120)),
        )?;
        Ok(())
    }

    /// `apt-get ARGS` with policy-rc.d in place, removed afterwards.
    fn get(&self, what: String, args: Vec<String>) -> Result<()> {
        self.files
            .write(
                POLICY_RC_D,
                b"#!/bin/sh\n# dcn: start nothing while packages install\nexit 101\n",
                &FileSpec::public().mode(0o755),
            )
            .context("keeping services from starting during the install")?;
        // An install a power cut interrupted leaves packages unpacked but
        // not configured, and apt-get refuses to go on until dpkg finishes
        // them (a no-op otherwise). A package whose maintainer script
        // fails stays half-configured and fails here again: apt goes on,
        // and a newer version it installs replaces it (the fix published
        // after a failed upgrade); if none does, apt fails with dpkg's
        // words.
        let finished = self.runner.run(
            &Cmd::new("finishing an interrupted package install", "dpkg")
                .env("DEBIAN_FRONTEND", "noninteractive")
                .args(["--force-confdef", "--force-confold", "--configure", "-a"])
                .timeout(INSTALL_TIMEOUT)
                .unchecked(),
        );
        if let Ok(out) = &finished
            && !out.success()
        {
            tracing::warn!(
                "dpkg could not finish what an earlier install left half-done (apt goes on):\n{}",
                super::command::tail_lines(&format!("{}{}", out.stdout, out.stderr), 10)
            );
        }
        let result = finished.and_then(|_| {
            self.runner.run(
                &Cmd::new(what, "apt-get")
                    .env("DEBIAN_FRONTEND", "noninteractive")
                    .args(self.source_options())
                    .args(APT_OPTIONS.iter().copied())
                    .args([
                        "-q",
                        "-y",
                        "-o",
                        "Dpkg::Options::=--force-confdef",
                        "-o",
                        "Dpkg::Options::=--force-confold",
                    ])
                    .args(args)
                    .timeout(INSTALL_TIMEOUT),
            )
        });
        let removed = self.files.remove(POLICY_RC_D);
        result?;
        removed?;
        Ok(())
    }
}

/// A .deb file's control fields, as `dpkg-deb -f` prints them.
pub fn deb_control(runner: &dyn Runner, deb: &std::path::Path) -> Result<String> {
    let out = runner.run(
        &Cmd::new(
            format!("reading the control fields of {}", deb.display()),
            "dpkg-deb",
        )
        .arg("-f")
        .arg(deb.display().to_string())
        .read_only()
        .timeout(Duration::from_secs(60)),
    )?;
    Ok(out.stdout)
}

/// The .deb files of `packages` alone (no dependencies) into `dir`, from
/// the host's package lists.
pub fn download_debs(runner: &dyn Runner, packages: &[&str], dir: &std::path::Path) -> Result<()> {
    runner.run(
        &Cmd::new(format!("downloading {}", packages.join(", ")), "apt-get")
            .args(APT_OPTIONS.iter().copied())
            .args(["-q", "download"])
            .args(packages.iter().copied())
            .cwd(dir)
            .timeout(Duration::from_secs(600)),
    )?;
    Ok(())
}

/// Packages and their dependencies downloaded into a directory, resolved
/// against another root's dpkg status instead of this host's: how the lab
/// fills the repository its containers install from. Nothing is installed,
/// and the host's dpkg is not locked.
pub struct Download<'a> {
    pub runner: &'a dyn Runner,
    /// apt's own state and cache for these downloads.
    pub state: &'a std::path::Path,
    pub cache: &'a std::path::Path,
    /// Where the .deb files go.
    pub archives: &'a std::path::Path,
    /// The root whose dpkg status says what is installed already.
    pub installed_in: &'a std::path::Path,
}

impl Download<'_> {
    /// Refresh the host's package lists (shared with these downloads).
    pub fn refresh(&self) -> Result<()> {
        self.runner.run(
            &Cmd::new("refreshing the host's apt package lists", "apt-get")
                .args(APT_OPTIONS.iter().copied())
                .args(["-q", "update"])
                .timeout(Duration::from_secs(600)),
        )?;
        Ok(())
    }

    fn get(&self, what: String, args: &[String]) -> Result<()> {
        let options = [
            format!("Dir::State={}/", self.state.display()),
            "Dir::State::Lists=/var/lib/apt/lists/".to_string(),
            format!(
                "Dir::State::status={}/var/lib/dpkg/status",
                self.installed_in.display()
            ),
            format!("Dir::Cache={}/", self.cache.display()),
            format!("Dir::Cache::archives={}/", self.archives.display()),
            "APT::Install-Recommends=false".to_string(),
            "APT::Install-Suggests=false".to_string(),
            "Acquire::Retries=3".to_string(),
            // The host's dpkg is not involved: nothing is installed here.
            "Debug::NoLocking=true".to_string(),
        ];
        let mut cmd = Cmd::new(what, "apt-get").env("DEBIAN_FRONTEND", "noninteractive");
        for o in options {
            cmd = cmd.arg("-o").arg(o);
        }
        self.runner.run(
            &cmd.args(["-q", "-y", "--download-only"])
                .args(args.iter().cloned())
                .timeout(Duration::from_secs(1800)),
        )?;
        Ok(())
    }

    /// Updates of what the root has installed (debootstrap takes the
    /// release, not its point and security updates).
    pub fn upgrades(&self) -> Result<()> {
        self.get(
            "downloading updates of the base system".into(),
            &["dist-upgrade".into()],
        )
    }

    /// `packages` and what they need beyond the root's installed set.
    pub fn packages(&self, packages: &[String]) -> Result<()> {
        let mut args = vec!["install".to_string()];
        args.extend(packages.iter().cloned());
        self.get(
            format!(
                "downloading {} packages and their dependencies",
                packages.len()
            ),
            &args,
        )
    }
}

#[cfg(test)]
mod tests;
