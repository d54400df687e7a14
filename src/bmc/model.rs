//! The few Redfish resources dcn reads, as serde types. Every field is
//! optional or defaulted: BMCs leave out, or send `null` for, properties the
//! schema calls required, and an unknown property is never an error.

use serde::Deserialize;

/// A link: `{"@odata.id": "/redfish/v1/Systems/1"}`.
#[derive(Debug, Clone, Deserialize)]
pub struct Link {
    #[serde(rename = "@odata.id")]
    pub odata_id: String,
}

/// `/redfish/v1/`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ServiceRoot {
    #[serde(default)]
    pub redfish_version: Option<String>,
    #[serde(default)]
    pub systems: Option<Link>,
    #[serde(default)]
    pub managers: Option<Link>,
}

/// Any resource collection (one page of it: read it with
/// `collection::members`, which follows the next pages).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Collection {
    #[serde(default, deserialize_with = "null_as_default")]
    pub members: Vec<Link>,
    /// The next page, when the BMC pages the collection.
    #[serde(default, rename = "Members@odata.nextLink")]
    pub next_link: Option<String>,
}

/// `ComputerSystem`: a server.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ComputerSystem {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default, rename = "UUID")]
    pub uuid: Option<String>,
    #[serde(default)]
    pub power_state: Option<String>,
    #[serde(default)]
    pub boot: Option<Boot>,
    #[serde(default)]
    pub virtual_media: Option<Link>,
    #[serde(default)]
    pub links: Option<SystemLinks>,
    #[serde(default)]
    pub actions: Option<SystemActions>,
    #[serde(default, rename = "@odata.etag")]
    pub etag: Option<String>,
}

/// `ComputerSystem.Boot`: the boot source override.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Boot {
    #[serde(default)]
    pub boot_source_override_target: Option<String>,
    #[serde(default)]
    pub boot_source_override_enabled: Option<String>,
    #[serde(default)]
    pub boot_source_override_mode: Option<String>,
    #[serde(default, rename = "BootSourceOverrideTarget@Redfish.AllowableValues")]
    pub allowed_targets: Option<Vec<String>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct SystemLinks {
    #[serde(default, deserialize_with = "null_as_default")]
    pub managed_by: Vec<Link>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SystemActions {
    #[serde(default, rename = "#ComputerSystem.Reset")]
    pub reset: Option<ResetAction>,
}

/// `#ComputerSystem.Reset`: where to POST, and which reset types are
/// allowed (inline, or in a separate ActionInfo resource).
#[derive(Debug, Clone, Deserialize)]
pub struct ResetAction {
    pub target: String,
    #[serde(default, rename = "ResetType@Redfish.AllowableValues")]
    pub allowed: Option<Vec<String>>,
    #[serde(default, rename = "@Redfish.ActionInfo")]
    pub action_info: Option<String>,
}

/// An `ActionInfo` resource: the parameters an action takes.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ActionInfo {
    #[serde(default, deserialize_with = "null_as_default")]
    pub parameters: Vec<ActionParameter>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ActionParameter {
    pub name: String,
    #[serde(default)]
    pub allowable_values: Option<Vec<String>>,
}

/// `Manager`: the BMC itself.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Manager {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub virtual_media: Option<Link>,
}

/// `VirtualMedia`: one virtual drive (CD, USB stick, floppy).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct VirtualMedia {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub media_types: Vec<String>,
    #[serde(default)]
    pub image: Option<String>,
    #[serde(default)]
    pub inserted: Option<bool>,
    #[serde(default)]
    pub connected_via: Option<String>,
    #[serde(default)]
    pub actions: Option<VirtualMediaActions>,
    /// The CA certificates it verifies the image server against.
    #[serde(default)]
    pub certificates: Option<Link>,
    /// Whether it verifies the image server's certificate.
    #[serde(default)]
    pub verify_certificate: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct VirtualMediaActions {
    #[serde(default, rename = "#VirtualMedia.InsertMedia")]
    pub insert: Option<ActionTarget>,
    #[serde(default, rename = "#VirtualMedia.EjectMedia")]
    pub eject: Option<ActionTarget>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ActionTarget {
    pub target: String,
}

impl VirtualMedia {
    /// Whether this drive takes a CD or DVD image. A drive that lists no
    /// media types at all is judged by its Id and Name.
    pub fn takes_cd(&self) -> bool {
        let cd = |s: &str| {
            let s = s.to_ascii_uppercase();
            s.contains("CD") || s.contains("DVD")
        };
        if self.media_types.is_empty() {
            self.id.as_deref().is_some_and(cd) || self.name.as_deref().is_some_and(cd)
        } else {
            self.media_types
                .iter()
                .any(|t| t.eq_ignore_ascii_case("CD") || t.eq_ignore_ascii_case("DVD"))
        }
    }

    /// The image URL, when one is inserted.
    pub fn inserted_image(&self) -> Option<&str> {
        let image = self.image.as_deref().filter(|i| !i.is_empty());
        match self.inserted {
            Some(false) => None,
            // Some BMCs never set Inserted; an Image means media.
            _ => image,
        }
    }

    /// Whether anything is inserted (an image, or `Inserted: true`).
    pub fn is_inserted(&self) -> bool {
        self.inserted == Some(true) || self.inserted_image().is_some()
    }
}

fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}
