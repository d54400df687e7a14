//! What an install or upgrade would change, from apt's own simulation
//! (`apt-get -s`): each package with the version it has and the one it
//! would get, or its removal. apt resolves, dcn only reads the answer.

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

#[cfg(test)]
mod tests {
    use super::*;

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
