//! Finding things by following links from `/redfish/v1/`, never by
//! guessing paths: BMCs put systems, managers and virtual media in different
//! places (Dell iDRAC 9 ≥ 6.x and sushy-tools under the System, most others
//! under the Manager).

use super::client::{Client, Fetched};
use super::collection;
use super::model::{ComputerSystem, Manager, ServiceRoot, VirtualMedia};
use crate::terminal_text::{Column, Table, cut};
use anyhow::{Context, Result, bail};

pub const SERVICE_ROOT: &str = "/redfish/v1/";

/// A system and where it lives.
#[derive(Debug, Clone)]
pub struct System {
    pub path: String,
    pub resource: ComputerSystem,
    pub etag: Option<String>,
}

impl System {
    /// `Id (Name)` for messages, each cut to a length that fits a line
    /// (the BMC chooses them).
    pub fn label(&self) -> String {
        let id = self.resource.id.as_deref().unwrap_or(&self.path);
        let id = cut(id, 128);
        match &self.resource.name {
            Some(n) if *n != id => format!("{id} ({})", cut(n, 64)),
            _ => id.into_owned(),
        }
    }

    /// Read it again (after a change).
    pub fn reload(&self, client: &Client) -> Result<System> {
        let Fetched { value, etag } = client
            .get::<ComputerSystem>(&self.path)
            .with_context(|| format!("reading system {}", self.label()))?;
        Ok(System {
            path: self.path.clone(),
            resource: value,
            etag,
        })
    }
}

/// A virtual drive and where it lives.
#[derive(Debug, Clone)]
pub struct Slot {
    pub path: String,
    pub media: VirtualMedia,
}

impl Slot {
    pub fn id(&self) -> String {
        self.media
            .id
            .clone()
            .unwrap_or_else(|| self.path.rsplit('/').next().unwrap_or("").to_string())
    }

    pub fn reload(&self, client: &Client) -> Result<Slot> {
        let media = client
            .get::<VirtualMedia>(&self.path)
            .with_context(|| format!("reading virtual media {}", self.id()))?
            .value;
        Ok(Slot {
            path: self.path.clone(),
            media,
        })
    }
}

/// The system to act on: the one named by `wanted` (Id, Name, UUID or the
/// last part of its path), or the only one. Several and none wanted: an
/// error that lists them.
pub fn find_system(client: &Client, wanted: Option<&str>) -> Result<System> {
    let root = client
        .get::<ServiceRoot>(SERVICE_ROOT)
        .context("reading the Redfish service root")?
        .value;
    let systems = root
        .systems
        .context("the BMC's service root links no Systems collection")?;
    let members =
        collection::members(client, &systems.odata_id).context("listing the BMC's systems")?;
    if members.is_empty() {
        bail!("the BMC lists no systems under {}", systems.odata_id);
    }
    if let Some(w) = wanted
        && let Some(m) = members.iter().find(|m| last_segment(&m.odata_id) == w)
    {
        return load_system(client, &m.odata_id);
    }
    if wanted.is_none() && members.len() == 1 {
        return load_system(client, &members[0].odata_id);
    }
    let all = members
        .iter()
        .map(|m| load_system(client, &m.odata_id))
        .collect::<Result<Vec<_>>>()?;
    if let Some(w) = wanted {
        let found = all.iter().find(|s| {
            let r = &s.resource;
            [&r.id, &r.name, &r.uuid]
                .iter()
                .any(|v| v.as_deref().is_some_and(|v| v.eq_ignore_ascii_case(w)))
        });
        return match found {
            Some(s) => Ok(s.clone()),
            None => bail!("the BMC has no system {w:?}; it has:\n{}", list(&all)),
        };
    }
    bail!(
        "the BMC manages {} systems; say which with --system ID:\n{}",
        all.len(),
        list(&all)
    )
}

fn load_system(client: &Client, path: &str) -> Result<System> {
    let Fetched { value, etag } = client
        .get::<ComputerSystem>(path)
        .with_context(|| format!("reading system {path}"))?;
    Ok(System {
        path: path.to_string(),
        resource: value,
        etag,
    })
}

/// One line per system, for the operator to choose with `--system`. The
/// names are the BMC's: each cell is bounded.
fn list(systems: &[System]) -> String {
    let mut t = Table::new(&[
        Column::new("", 128),
        Column::new("", 64),
        Column::new("", 40),
    ])
    .indent("  ");
    for s in systems {
        let r = &s.resource;
        t.row([
            r.id.as_deref().unwrap_or(&s.path),
            r.name.as_deref().unwrap_or("-"),
            &format!("power {}", r.power_state.as_deref().unwrap_or("unknown")),
        ]);
    }
    t.render().trim_end().to_string()
}

fn last_segment(path: &str) -> &str {
    path.trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(path)
}

/// Every virtual drive of `system`: the System's own collection first, then
/// its managers' (`Links.ManagedBy`, or every manager when the system names
/// none). A collection that is linked but answers 404 is skipped.
pub fn virtual_media(client: &Client, system: &System) -> Result<Vec<Slot>> {
    let mut collections: Vec<String> = Vec::new();
    if let Some(l) = &system.resource.virtual_media {
        collections.push(l.odata_id.clone());
    }
    let mut managers: Vec<String> = system
        .resource
        .links
        .as_ref()
        .map(|l| l.managed_by.iter().map(|m| m.odata_id.clone()).collect())
        .unwrap_or_default();
    if managers.is_empty() {
        let root = client.get::<ServiceRoot>(SERVICE_ROOT)?.value;
        if let Some(m) = root.managers {
            managers = collection::members_if_found(client, &m.odata_id)?
                .map(|c| c.into_iter().map(|m| m.odata_id).collect())
                .unwrap_or_default();
        }
    }
    if managers.len() > collection::MAX_MEMBERS {
        bail!(
            "system {} names more than {} managers (Links.ManagedBy); dcn reads at most that many",
            system.label(),
            collection::MAX_MEMBERS
        );
    }
    for m in &managers {
        let manager = match client.get::<Manager>(m) {
            Ok(found) => Some(found),
            Err(e) if e.is_status(404) => None,
            Err(e) => return Err(e).with_context(|| format!("reading manager {m}")),
        };
        if let Some(l) = manager.and_then(|m| m.value.virtual_media) {
            collections.push(l.odata_id);
        }
    }
    let mut slots: Vec<Slot> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for c in collections {
        let c = c.trim_end_matches('/').to_string();
        if seen.contains(&c) {
            continue;
        }
        seen.push(c.clone());
        let Some(members) = collection::members_if_found(client, &c)
            .with_context(|| format!("listing virtual media {c}"))?
        else {
            tracing::debug!("{c}: linked, but the BMC answers 404");
            continue;
        };
        for m in members {
            if slots.iter().any(|s| s.path == m.odata_id) {
                continue;
            }
            if slots.len() == collection::MAX_MEMBERS {
                bail!(
                    "system {} has more than {} virtual drives; dcn reads at most that many",
                    system.label(),
                    collection::MAX_MEMBERS
                );
            }
            let media = client
                .get::<VirtualMedia>(&m.odata_id)
                .with_context(|| format!("reading virtual media {}", m.odata_id))?
                .value;
            slots.push(Slot {
                path: m.odata_id,
                media,
            });
        }
    }
    Ok(slots)
}

/// The first virtual drive that takes a CD or DVD image.
pub fn cd_slot(client: &Client, system: &System) -> Result<Slot> {
    let slots = virtual_media(client, system)?;
    if let Some(s) = slots.iter().find(|s| s.media.takes_cd()) {
        return Ok(s.clone());
    }
    let found = if slots.is_empty() {
        "it has no virtual media, under the system or its manager".to_string()
    } else {
        format!(
            "its virtual drives take no CD or DVD: {}",
            slots
                .iter()
                .map(|s| format!("{} ({})", s.id(), s.media.media_types.join(", ")))
                .collect::<Vec<_>>()
                .join("; ")
        )
    };
    bail!(
        "system {} cannot boot an ISO through this BMC: {found}. Some BMCs offer virtual media only with a license or once it is enabled in their settings",
        system.label()
    )
}
