//! `customServiceConfig`: the operator's oslo.config INI text for one
//! service, checked for syntax and bounded in size when it is read.
//!
//! The bounds keep what one text costs small and known: a node's drop-in
//! merges at most three of them (control plane, site, node), so a node's
//! config request and each node's part of a dry run handle at most three
//! times these sizes. They are far above real use: an oslo.config service
//! has fewer than a hundred option groups, and an override sets the few
//! options that differ.

use serde::{Deserialize, Serialize};

/// The most bytes in one `customServiceConfig`.
pub const MAX_BYTES: usize = 128 * 1024;
/// The most `[sections]` in one `customServiceConfig`.
pub const MAX_SECTIONS: usize = 256;
/// The most options (distinct keys of all its sections) in one
/// `customServiceConfig`.
pub const MAX_OPTIONS: usize = 4096;

/// Raw oslo.config INI text that the operator adds to a service's
/// configuration. It is checked for INI syntax and against [`MAX_BYTES`],
/// [`MAX_SECTIONS`] and [`MAX_OPTIONS`] when the file is read.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct IniText(String);

impl IniText {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.trim().is_empty()
    }
}

impl TryFrom<String> for IniText {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        let too_big = |what: String, max: usize| {
            format!(
                "customServiceConfig {what}, more than the {max} dcn accepts: set only the options you change (a service has fewer than a hundred option groups)"
            )
        };
        if s.len() > MAX_BYTES {
            return Err(too_big(format!("is {} bytes", s.len()), MAX_BYTES));
        }
        let ini = crate::ini::Ini::parse(&s)
            .map_err(|e| format!("invalid INI in customServiceConfig, {e}"))?;
        let sections = ini.sections().len();
        if sections > MAX_SECTIONS {
            return Err(too_big(format!("has {sections} sections"), MAX_SECTIONS));
        }
        let options: usize = ini.sections().iter().map(|s| s.entries().len()).sum();
        if options > MAX_OPTIONS {
            return Err(too_big(format!("sets {options} options"), MAX_OPTIONS));
        }
        Ok(IniText(s))
    }
}

impl From<IniText> for String {
    fn from(v: IniText) -> String {
        v.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sections(n: usize) -> String {
        (0..n).map(|i| format!("[s{i}]\nk = v\n")).collect()
    }

    fn options(n: usize) -> String {
        let keys: String = (0..n).map(|i| format!("k{i} = v\n")).collect();
        format!("[DEFAULT]\n{keys}")
    }

    #[test]
    fn texts_up_to_the_bounds_are_accepted_and_larger_ones_refused_with_the_bound() {
        assert!(IniText::try_from(sections(MAX_SECTIONS)).is_ok());
        assert!(IniText::try_from(options(MAX_OPTIONS)).is_ok());
        let long = format!("[DEFAULT]\nk = {}\n", "x".repeat(MAX_BYTES - 15));
        assert_eq!(long.len(), MAX_BYTES);
        assert!(IniText::try_from(long.clone()).is_ok());
        for (text, says) in [
            (
                sections(MAX_SECTIONS + 1),
                "has 257 sections, more than the 256",
            ),
            (
                options(MAX_OPTIONS + 1),
                "sets 4097 options, more than the 4096",
            ),
            (long + "\n", "is 131073 bytes, more than the 131072"),
            // Repeated headers add to one section, and a repeated key is
            // one option, as oslo.config reads them.
            (
                sections(MAX_SECTIONS) + &sections(1) + "[x]\n",
                "has 257 sections",
            ),
        ] {
            let e = IniText::try_from(text).unwrap_err();
            assert!(
                e.contains(says) && e.contains("set only the options you change"),
                "{e}"
            );
        }
        let repeated = format!("{}{}", sections(MAX_SECTIONS), sections(MAX_SECTIONS));
        assert!(IniText::try_from(repeated).is_ok());
        let repeated = format!("{}{}", options(MAX_OPTIONS), options(MAX_OPTIONS));
        assert!(IniText::try_from(repeated).is_ok());
    }
}
