//! oslo.config-style INI text: parsing with line-numbered errors (an
//! operator's `customServiceConfig` is checked before anything changes),
//! merging and rendering of generated config files, and their diffs
//! ([`diff`]), each in time that grows with the text's size, not its square.
//!
//! Accepted syntax, as oslo.config's parser (`oslo_config.iniparser`):
//! `[section]` headers, `key = value` or `key: value` lines, `#` and `;`
//! comments, blank lines, and continuation lines that start with whitespace
//! (appended to the previous option's value with a newline).
//!
//! What dcn checks must be what the service reads. oslo.config opens a file
//! in Python's text mode, whose universal newlines end a line at `\n`, `\r\n`
//! *and a bare `\r`*, and strips lines with `str.strip`, which also removes
//! `\x0b`, `\x0c`, `\x1c`-`\x1f`, `\x85` and Unicode spaces. So a bare `\r`,
//! every other control character but tab, and every whitespace character but
//! space and tab are refused: with them gone, both parsers split the same
//! lines and strip the same characters.

pub mod diff;

use std::collections::HashMap;
use std::fmt;

/// One `key = value` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: String,
    pub value: String,
}

/// One section with its entries, in the order their keys first appeared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    name: String,
    entries: Vec<Entry>,
    /// Where each key's entry is in `entries`.
    by_key: HashMap<String, usize>,
}

impl Section {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }
}

/// An INI document as a service reads it: each section once, each key of
/// a section once with its last value (a repeated `[section]` adds to the
/// first, a repeated key replaces its value where it first appeared), in
/// the order they first appeared. Every lookup goes through an index, so
/// building or merging a document costs time in proportion to its size
/// (a SiteConfig of tens of thousands of sections once cost minutes).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ini {
    sections: Vec<Section>,
    /// Where each section is in `sections`.
    by_name: HashMap<String, usize>,
}

/// Where an entry is: its section's index and its own within the section,
/// which sort in file order.
pub type Position = (usize, usize);

/// A syntax error, with the 1-based line it is on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct IniError {
    pub line: usize,
    pub message: String,
}

impl Ini {
    /// Parse `text`.
    pub fn parse(text: &str) -> Result<Ini, IniError> {
        let mut ini = Ini::default();
        // The section the lines are in, and the entry a continuation line
        // would continue.
        let mut section: Option<usize> = None;
        let mut last_entry: Option<Position> = None;
        // `lines` ends lines at `\n` and `\r\n`, as Python does once every
        // other line break is refused.
        for (idx, raw) in text.lines().enumerate() {
            let line = idx + 1;
            let err = |message: String| IniError { line, message };
            check_characters(raw).map_err(err)?;
            let trimmed = raw.trim();
            if trimmed.is_empty() {
                last_entry = None;
                continue;
            }
            // Indented: oslo.config continues the previous option, even
            // with a `#`, and refuses the line when there is none.
            if raw.starts_with([' ', '\t']) {
                let Some((i, j)) = last_entry else {
                    return Err(err(format!(
                        "{trimmed:?} is indented but continues no option (oslo.config refuses it as an unexpected continuation line); remove the indentation"
                    )));
                };
                let value = &mut ini.sections[i].entries[j].value;
                value.push('\n');
                value.push_str(trimmed);
                continue;
            }
            last_entry = None;
            if trimmed.starts_with('#') || trimmed.starts_with(';') {
                continue;
            }
            if let Some(rest) = trimmed.strip_prefix('[') {
                let Some(name) = rest.strip_suffix(']') else {
                    return Err(err(format!(
                        "section header {trimmed:?} has no closing ']'"
                    )));
                };
                if name.is_empty() || name.contains(['[', ']']) {
                    return Err(err(format!("invalid section name {trimmed:?}")));
                }
                if name.trim() != name {
                    return Err(err(format!(
                        "section name {trimmed:?} has spaces inside its brackets, which oslo.config keeps as part of the name; remove them"
                    )));
                }
                section = Some(ini.section_index(name));
                continue;
            }
            let Some(pos) = trimmed.find(['=', ':']) else {
                return Err(err(format!(
                    "{trimmed:?} is neither a [section] header nor a `key = value` line"
                )));
            };
            let key = trimmed[..pos].trim();
            if key.is_empty() || key.contains(char::is_whitespace) {
                return Err(err(format!("invalid option name {key:?}")));
            }
            let Some(i) = section else {
                return Err(err(format!(
                    "option {key:?} comes before any [section] header"
                )));
            };
            let value = trimmed[pos + 1..].trim().to_string();
            last_entry = Some((i, ini.set_in(i, key, value)));
        }
        Ok(ini)
    }

    /// The sections, in file order.
    pub fn sections(&self) -> &[Section] {
        &self.sections
    }

    /// Whether no section has an entry.
    pub fn is_empty(&self) -> bool {
        self.sections.iter().all(|s| s.entries.is_empty())
    }

    /// The index of the section called `name`, created at the end if
    /// missing.
    fn section_index(&mut self, name: &str) -> usize {
        if let Some(&i) = self.by_name.get(name) {
            return i;
        }
        self.sections.push(Section {
            name: name.to_string(),
            entries: Vec::new(),
            by_key: HashMap::new(),
        });
        self.by_name
            .insert(name.to_string(), self.sections.len() - 1);
        self.sections.len() - 1
    }

    /// Set `key` in section `i`; the entry's index.
    fn set_in(&mut self, i: usize, key: &str, value: String) -> usize {
        let s = &mut self.sections[i];
        if let Some(&j) = s.by_key.get(key) {
            s.entries[j].value = value;
            return j;
        }
        s.entries.push(Entry {
            key: key.to_string(),
            value,
        });
        s.by_key.insert(key.to_string(), s.entries.len() - 1);
        s.entries.len() - 1
    }

    /// Set `key` in `section` (both created at the end if missing),
    /// replacing an earlier value where it is; where the entry is.
    pub fn set(&mut self, section: &str, key: &str, value: impl Into<String>) -> Position {
        let i = self.section_index(section);
        (i, self.set_in(i, key, value.into()))
    }

    /// The value of `key` in `section`.
    pub fn get(&self, section: &str, key: &str) -> Option<&str> {
        let s = &self.sections[*self.by_name.get(section)?];
        Some(s.entries[*s.by_key.get(key)?].value.as_str())
    }

    /// The section name and entry at `at` (from [`Ini::set`]).
    pub fn at(&self, (i, j): Position) -> (&str, &Entry) {
        let s = &self.sections[i];
        (&s.name, &s.entries[j])
    }
}

/// Refuse a character that oslo.config treats as a line break or strips as
/// whitespace where dcn would not (see the module docs). `raw` is one line
/// without its `\n` (and without the `\r` of a `\r\n`).
fn check_characters(raw: &str) -> Result<(), String> {
    let Some(c) = raw
        .chars()
        .find(|&c| c != '\t' && (c.is_control() || (c.is_whitespace() && c != ' ')))
    else {
        return Ok(());
    };
    Err(if c == '\r' {
        "a carriage return (\\r) not followed by a line feed: oslo.config starts a new line there and dcn does not, so the service would read other sections and options than dcn checked; end lines with \\n".to_string()
    } else {
        let kind = if c.is_control() {
            "control character"
        } else {
            "Unicode space or line separator"
        };
        format!(
            "the {kind} U+{:04X}: oslo.config splits lines or strips whitespace at characters like it where dcn does not; use plain spaces, tabs and \\n line ends",
            u32::from(c)
        )
    })
}

impl fmt::Display for Ini {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.sections.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            writeln!(f, "[{}]", s.name)?;
            for e in &s.entries {
                // Continuation lines keep multi-line values intact.
                writeln!(f, "{} = {}", e.key, e.value.replace('\n', "\n    "))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
