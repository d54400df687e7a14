//! `dcn bmc status`: power, boot override and virtual media of one system.

use super::client::Client;
use super::discover::{self, System};
use crate::terminal_text::cut;
use anyhow::Result;
use serde::Serialize;
use std::fmt;

#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub system: String,
    pub name: Option<String>,
    pub power_state: Option<String>,
    pub boot: BootStatus,
    pub virtual_media: Vec<MediaStatus>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BootStatus {
    pub target: Option<String>,
    pub enabled: Option<String>,
    pub mode: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MediaStatus {
    pub id: String,
    pub media_types: Vec<String>,
    pub inserted: bool,
    pub image: Option<String>,
}

pub fn status(client: &Client, system: &System) -> Result<Status> {
    let r = &system.resource;
    let boot = r.boot.clone().unwrap_or_default();
    let media = discover::virtual_media(client, system)?
        .into_iter()
        .map(|s| MediaStatus {
            id: s.id(),
            media_types: s.media.media_types.clone(),
            inserted: s.media.is_inserted(),
            image: s.media.inserted_image().map(str::to_string),
        })
        .collect();
    Ok(Status {
        system: r.id.clone().unwrap_or_else(|| system.path.clone()),
        name: r.name.clone(),
        power_state: r.power_state.clone(),
        boot: BootStatus {
            target: boot.boot_source_override_target,
            enabled: boot.boot_source_override_enabled,
            mode: boot.boot_source_override_mode,
        },
        virtual_media: media,
    })
}

/// The most characters of one value shown (the BMC chooses them; `--output
/// json` has them whole).
const SHOWN: usize = 512;

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let or = |v: &Option<String>| cut(v.as_deref().unwrap_or("-"), SHOWN).into_owned();
        let system = cut(&self.system, SHOWN);
        match &self.name {
            Some(n) if *n != self.system => {
                writeln!(f, "system:         {system} ({})", cut(n, SHOWN))?
            }
            _ => writeln!(f, "system:         {system}")?,
        }
        writeln!(f, "power:          {}", or(&self.power_state))?;
        let mut boot = or(&self.boot.target);
        let extra: Vec<String> = [&self.boot.enabled, &self.boot.mode]
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        if !extra.is_empty() {
            boot = format!("{boot} ({})", extra.join(", "));
        }
        writeln!(f, "boot override:  {boot}")?;
        if self.virtual_media.is_empty() {
            return write!(f, "virtual media:  none");
        }
        for (i, m) in self.virtual_media.iter().enumerate() {
            let what = match (&m.image, m.inserted) {
                (Some(url), _) => cut(url, SHOWN).into_owned(),
                (None, true) => "inserted".into(),
                (None, false) => "empty".into(),
            };
            let label = if i == 0 { "virtual media:" } else { "" };
            write!(
                f,
                "{label:<15} {} [{}]: {what}",
                cut(&m.id, SHOWN),
                cut(&m.media_types.join(", "), SHOWN)
            )?;
            if i + 1 < self.virtual_media.len() {
                writeln!(f)?;
            }
        }
        Ok(())
    }
}
