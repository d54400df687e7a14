//! The size checks (cpus, memory, disk-var) and the minimums of each role
//! they judge against, sharing one [`Measure`] so their messages read alike.

use super::{CheckResult, GIB, Severity, gib, plural};
use crate::preflight::Role;
use crate::preflight::facts::Facts;

/// Below `error_below` a check fails with an error, below `warn_below` with
/// a warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub error_below: u64,
    pub warn_below: u64,
}

/// Minimum sizes of a role. Memory and disk are in GiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub cpus: Limit,
    pub memory_gib: Limit,
    pub disk_var_gib: Limit,
}

pub fn limits(role: Role) -> Limits {
    let l = |error_below, warn_below| Limit {
        error_below,
        warn_below,
    };
    match role {
        Role::Standalone => Limits {
            cpus: l(2, 2),
            memory_gib: l(4, 8),
            disk_var_gib: l(10, 20),
        },
        Role::Edge => Limits {
            cpus: l(1, 2),
            memory_gib: l(2, 4),
            disk_var_gib: l(5, 20),
        },
    }
}

/// `MemTotal` is installed memory minus what the kernel reserves at boot,
/// so a machine with 4 GiB reads about 3.8 GiB. A memory limit counts as
/// met within this margin, so the documented sizes pass on real machines.
const MEMTOTAL_MARGIN_PERCENT: u64 = 10;

/// A measured size, to be judged against a [`Limit`]. Shared by the CPU,
/// memory and disk checks so their messages read alike.
struct Measure<'a> {
    name: &'static str,
    role: Role,
    /// The value as shown, e.g. "23.4 GiB" or "2 CPUs".
    shown: String,
    /// Whether the value reaches a limit (given in the limit's unit).
    meets: &'a dyn Fn(u64) -> bool,
    /// A limit as shown, e.g. "4 GiB".
    unit: &'a dyn Fn(u64) -> String,
    /// The fix when the value is below a limit (given as shown).
    fix: &'a dyn Fn(&str) -> String,
}

impl Measure<'_> {
    fn judge(&self, limit: &Limit) -> CheckResult {
        let (min, rec) = (
            (self.unit)(limit.error_below),
            (self.unit)(limit.warn_below),
        );
        let range = if limit.warn_below > limit.error_below {
            format!("minimum {min}, recommended {rec}")
        } else {
            format!("minimum {min}")
        };
        let host = match self.role {
            Role::Standalone => "a standalone control plane",
            Role::Edge => "an edge compute host",
        };
        if !(self.meets)(limit.error_below) {
            let message = format!("{}, below the minimum of {min} for {host}", self.shown);
            CheckResult::fail(self.name, Severity::Error, message, (self.fix)(&min))
        } else if !(self.meets)(limit.warn_below) {
            let message = format!("{}, below the recommended {rec} for {host}", self.shown);
            CheckResult::fail(self.name, Severity::Warning, message, (self.fix)(&rec))
        } else {
            CheckResult::pass(
                self.name,
                Severity::Error,
                format!("{} ({range})", self.shown),
            )
        }
    }
}

pub(super) fn check_cpus(role: Role, facts: &Facts, limits: &Limits) -> CheckResult {
    let n = match facts.cpus.get() {
        Ok(n) => u64::from(*n),
        Err(why) => {
            return CheckResult::unknown(
                "cpus",
                "/proc/cpuinfo",
                why,
                "check that /proc is mounted",
            );
        }
    };
    Measure {
        name: "cpus",
        role,
        shown: plural(n, "CPU"),
        meets: &|limit| n >= limit,
        unit: &|v| v.to_string(),
        fix: &|needed| format!("give the host at least {needed} CPUs"),
    }
    .judge(&limits.cpus)
}

pub(super) fn check_memory(role: Role, facts: &Facts, limits: &Limits) -> CheckResult {
    let bytes = match facts.memory_bytes.get() {
        Ok(b) => *b,
        Err(why) => {
            return CheckResult::unknown(
                "memory",
                "/proc/meminfo",
                why,
                "check that /proc is mounted",
            );
        }
    };
    Measure {
        name: "memory",
        role,
        shown: gib(bytes),
        meets: &|limit_gib| {
            let limit = limit_gib * GIB;
            bytes >= limit - limit / 100 * MEMTOTAL_MARGIN_PERCENT
        },
        unit: &|v| format!("{v} GiB"),
        fix: &|needed| format!("give the host at least {needed} of memory"),
    }
    .judge(&limits.memory_gib)
}

pub(super) fn check_disk_var(role: Role, facts: &Facts, limits: &Limits) -> CheckResult {
    let bytes = match facts.var_free_bytes.get() {
        Ok(b) => *b,
        Err(why) => {
            return CheckResult::unknown(
                "disk-var",
                "the free space under /var",
                why,
                "check that /var exists",
            );
        }
    };
    Measure {
        name: "disk-var",
        role,
        shown: format!("{} free under /var", gib(bytes)),
        meets: &|limit_gib| bytes >= limit_gib * GIB,
        unit: &|v| format!("{v} GiB"),
        fix: &|needed| {
            format!("free space under /var, or grow the filesystem that holds it, to {needed} free")
        },
    }
    .judge(&limits.disk_var_gib)
}
