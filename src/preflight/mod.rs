//! Preflight: does this host fit the role dcn is about to give it?
//! (`dcn preflight standalone|edge`, and the first step of
//! `standalone init` and `join`.)
//!
//! [`facts::gather`] reads the host once; [`checks::evaluate`] judges the
//! facts with pure functions; [`run`] ties them together with the
//! operator's `--ignore-preflight-errors` list into a [`Report`], shown as
//! text ([`fmt::Display`]) or JSON ([`serde::Serialize`]). The checks,
//! their limits and the reasons for them are in docs/preflight.md.

pub mod checks;
pub mod facts;
pub mod sources;

pub use checks::{CHECK_NAMES, CheckResult, Params, Severity, Status, evaluate};
pub use facts::{Facts, gather};

use crate::host::Files;
use crate::recipes::Recipes;
use anyhow::{Result, bail};
use serde::Serialize;
use std::fmt;

/// The role a host is checked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The all-in-one control plane (`dcn standalone init`).
    Standalone,
    /// An edge compute host (`dcn join`).
    Edge,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Standalone => "standalone",
            Role::Edge => "edge",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The outcome of preflight: the facts, the checks, and which failures the
/// operator chose to ignore.
#[derive(Debug, Clone)]
pub struct Report {
    pub role: Role,
    pub facts: Facts,
    pub checks: Vec<CheckResult>,
    /// The validated `--ignore-preflight-errors` names (lower case; `all`
    /// stays `all`).
    pub ignored: Vec<String>,
}

/// Check the host whose files are `files` (rooted at `/` for this
/// machine) for `role`.
/// `ignore` holds `--ignore-preflight-errors` values: check names or
/// `all`, each possibly a comma-separated list. An unknown name is an
/// error, before anything is read.
pub fn run(
    recipes: &Recipes,
    role: Role,
    files: &Files,
    params: &Params,
    ignore: &[String],
) -> Result<Report> {
    let ignored = parse_ignore(ignore)?;
    Ok(Report::new(recipes, role, gather(files), params, ignored))
}

impl Report {
    /// Judge `facts` (already gathered) for `role`; `ignored` must come
    /// from [`parse_ignore`].
    pub fn new(
        recipes: &Recipes,
        role: Role,
        facts: Facts,
        params: &Params,
        ignored: Vec<String>,
    ) -> Report {
        let mut checks = evaluate(recipes, role, &facts, params);
        let all = ignored.iter().any(|n| n == "all");
        for c in &mut checks {
            if c.failed() && (all || ignored.iter().any(|n| n == c.name)) {
                c.status = Status::Ignored;
            }
        }
        Report {
            role,
            facts,
            checks,
            ignored,
        }
    }

    /// Some check failed with an error that was not ignored: the caller
    /// must stop.
    pub fn has_errors(&self) -> bool {
        self.errors().next().is_some()
    }

    fn errors(&self) -> impl Iterator<Item = &CheckResult> {
        self.checks
            .iter()
            .filter(|c| c.failed() && c.severity == Severity::Error)
    }

    /// nova's `[libvirt] virt_type`: `kvm` when the CPU exposes hardware
    /// virtualization and /dev/kvm is usable, `qemu` (software emulation)
    /// otherwise.
    pub fn virt_type(&self) -> &'static str {
        let cpu = matches!(self.facts.cpu_virt_flag.known(), Some(Some(_)));
        if cpu && self.facts.kvm_device == facts::KvmDevice::Usable {
            "kvm"
        } else {
            "qemu"
        }
    }
}

/// Validate and normalise `--ignore-preflight-errors` values.
pub fn parse_ignore(values: &[String]) -> Result<Vec<String>> {
    let mut names: Vec<String> = Vec::new();
    for name in values.iter().flat_map(|v| v.split(',')) {
        let name = name.trim().to_ascii_lowercase();
        if name.is_empty() || names.contains(&name) {
            continue;
        }
        if name != "all" && !CHECK_NAMES.contains(&name.as_str()) {
            bail!(
                "unknown preflight check {name:?} in --ignore-preflight-errors; \
                 the checks are {}, or all",
                CHECK_NAMES.join(", ")
            );
        }
        names.push(name);
    }
    Ok(names)
}

/// Width of the `[WARNING]` tag and of the longest check name, for columns.
const TAG_WIDTH: usize = 9;
const NAME_WIDTH: usize = 14;

/// One line per check (and a `fix:` line under each failure), then a
/// summary line, with no newline at the end.
impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in &self.checks {
            let tag = match (c.status, c.severity) {
                (Status::Pass, _) => "[PASS]",
                (Status::Fail, Severity::Error) => "[ERROR]",
                (Status::Fail, Severity::Warning) => "[WARNING]",
                (Status::Ignored, _) => "[IGNORED]",
            };
            writeln!(f, "{tag:<TAG_WIDTH$} {:<NAME_WIDTH$} {}", c.name, c.message)?;
            if let (Some(fix), false) = (&c.fix, c.status == Status::Pass) {
                writeln!(
                    f,
                    "{:indent$}fix: {fix}",
                    "",
                    indent = TAG_WIDTH + NAME_WIDTH + 2
                )?;
            }
        }
        let count = |s: Status, sev: Option<Severity>| {
            let n = self.checks.iter();
            n.filter(|c| c.status == s && sev.is_none_or(|v| c.severity == v))
                .count()
        };
        let warnings = count(Status::Fail, Some(Severity::Warning));
        let errors: Vec<&str> = self.errors().map(|c| c.name).collect();
        write!(
            f,
            "{} preflight: {} passed, {}, {}, {} ignored",
            self.role,
            count(Status::Pass, None),
            checks::plural(warnings as u64, "warning"),
            checks::plural(errors.len() as u64, "error"),
            count(Status::Ignored, None),
        )?;
        if !errors.is_empty() {
            write!(
                f,
                "; fix the errors, or skip them with --ignore-preflight-errors={}",
                errors.join(",")
            )?;
        }
        Ok(())
    }
}

impl Serialize for Report {
    /// The report with its verdict (`ok`) and `virt_type` up front, for
    /// scripts.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct View<'a> {
            role: Role,
            ok: bool,
            virt_type: &'static str,
            checks: &'a [CheckResult],
            ignored: &'a [String],
            facts: &'a Facts,
        }
        View {
            role: self.role,
            ok: !self.has_errors(),
            virt_type: self.virt_type(),
            checks: &self.checks,
            ignored: &self.ignored,
            facts: &self.facts,
        }
        .serialize(s)
    }
}

#[cfg(test)]
mod tests;
