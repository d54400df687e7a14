//! `backup:` in a StandaloneConfig: an optional schedule of backups of the
//! control plane (`dcn backup --scheduled`, run by the dcn-backup timer).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct BackupSchedule {
    /// When to take one: a systemd calendar expression (`daily`,
    /// `*-*-* 02:30`). null: never (the timer runs and does nothing).
    #[serde(deserialize_with = "calendar")]
    pub schedule: Option<String>,
    /// How many scheduled backups to keep; older ones are deleted.
    #[serde(deserialize_with = "keep")]
    pub keep: u32,
    /// Where they go (0700; each archive 0600).
    pub directory: PathBuf,
    /// Glance's image files too.
    pub with_images: bool,
}

impl Default for BackupSchedule {
    fn default() -> Self {
        BackupSchedule {
            schedule: None,
            keep: 7,
            directory: PathBuf::from("/var/backups/dcn"),
            with_images: false,
        }
    }
}

fn calendar<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let v = Option::<String>::deserialize(d)?;
    if let Some(s) = &v {
        let ok = !s.is_empty()
            && s.len() <= 64
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || " *-:,./~".contains(c));
        if !ok {
            return Err(serde::de::Error::custom(format!(
                "{s:?} is not a calendar expression: write e.g. daily, weekly or \"*-*-* 02:30\" (systemd.time(7))"
            )));
        }
    }
    Ok(v)
}

fn keep<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    match u32::deserialize(d)? {
        0 => Err(serde::de::Error::custom(
            "must be at least 1: keeping no backup would delete each one as it is made",
        )),
        n => Ok(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schedule_is_a_calendar_expression_and_keeps_at_least_one() {
        let s: BackupSchedule =
            serde_yaml::from_str("schedule: \"*-*-* 02:30\"\nkeep: 3\n").unwrap();
        assert_eq!(s.schedule.as_deref(), Some("*-*-* 02:30"));
        for (yaml, want) in [
            (
                "schedule: \"daily\\nExecStart=/bin/sh\"",
                "not a calendar expression",
            ),
            ("schedule: ''", "not a calendar expression"),
            ("keep: 0", "at least 1"),
        ] {
            let e = serde_yaml::from_str::<BackupSchedule>(yaml)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{yaml}: {e}");
        }
    }
}
