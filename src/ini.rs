//! oslo.config-style INI text: parsing with line-numbered errors (an
//! operator's `customServiceConfig` is checked before anything changes) and
//! rendering of generated config files.
//!
//! Accepted syntax, as oslo.config's parser: `[section]` headers, `key =
//! value` or `key: value` lines, `#` and `;` comments, blank lines, and
//! continuation lines that start with whitespace (appended to the previous
//! value with a newline).

use std::fmt;

/// One `key = value` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: String,
    pub value: String,
}

/// One section with its entries, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub name: String,
    pub entries: Vec<Entry>,
}

/// A parsed INI document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ini {
    pub sections: Vec<Section>,
}

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
        let mut last_entry = false;
        for (idx, raw) in text.lines().enumerate() {
            let line = idx + 1;
            let err = |message: String| IniError { line, message };
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
                last_entry = false;
                continue;
            }
            if raw.starts_with([' ', '\t']) && last_entry {
                let section = ini.sections.last_mut().expect("an entry implies a section");
                let entry = section.entries.last_mut().expect("last_entry is set");
                entry.value.push('\n');
                entry.value.push_str(trimmed);
                continue;
            }
            if let Some(rest) = trimmed.strip_prefix('[') {
                let Some(name) = rest.strip_suffix(']') else {
                    return Err(err(format!(
                        "section header {trimmed:?} has no closing ']'"
                    )));
                };
                let name = name.trim();
                if name.is_empty() || name.contains(['[', ']']) {
                    return Err(err(format!("invalid section name {trimmed:?}")));
                }
                ini.sections.push(Section {
                    name: name.to_string(),
                    entries: Vec::new(),
                });
                last_entry = false;
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
            let Some(section) = ini.sections.last_mut() else {
                return Err(err(format!(
                    "option {key:?} comes before any [section] header"
                )));
            };
            section.entries.push(Entry {
                key: key.to_string(),
                value: trimmed[pos + 1..].trim().to_string(),
            });
            last_entry = true;
        }
        Ok(ini)
    }

    /// The section called `name`, created at the end if missing.
    pub fn section_mut(&mut self, name: &str) -> &mut Section {
        if let Some(i) = self.sections.iter().position(|s| s.name == name) {
            return &mut self.sections[i];
        }
        self.sections.push(Section {
            name: name.to_string(),
            entries: Vec::new(),
        });
        self.sections.last_mut().expect("just pushed")
    }

    /// Set `key` in `section`, replacing an earlier value.
    pub fn set(&mut self, section: &str, key: &str, value: impl Into<String>) {
        let value = value.into();
        let s = self.section_mut(section);
        match s.entries.iter_mut().find(|e| e.key == key) {
            Some(e) => e.value = value,
            None => s.entries.push(Entry {
                key: key.to_string(),
                value,
            }),
        }
    }

    /// The last value of `key` in `section`.
    pub fn get(&self, section: &str, key: &str) -> Option<&str> {
        self.sections
            .iter()
            .filter(|s| s.name == section)
            .flat_map(|s| &s.entries)
            .rev()
            .find(|e| e.key == key)
            .map(|e| e.value.as_str())
    }
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
mod tests {
    use super::*;

    #[test]
    fn parses_sections_comments_and_continuations() {
        let ini = Ini::parse(
            "# comment\n[DEFAULT]\ndebug = true\n; other\n[database]\nconnection=mysql://x\nmulti = a\n  b\n\n[x]\nk: v\n",
        )
        .unwrap();
        assert_eq!(ini.get("DEFAULT", "debug"), Some("true"));
        assert_eq!(ini.get("database", "connection"), Some("mysql://x"));
        assert_eq!(ini.get("database", "multi"), Some("a\nb"));
        assert_eq!(ini.get("x", "k"), Some("v"));
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            ("debug = true\n", 1, "before any [section]"),
            ("[DEFAULT]\n\njust words\n", 3, "neither a [section]"),
            ("[DEFAULT\n", 1, "no closing"),
            ("[]\n", 1, "invalid section name"),
            ("[a]\n = x\n", 2, "invalid option name"),
        ];
        for (text, line, msg) in cases {
            let e = Ini::parse(text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}");
            assert!(e.message.contains(msg), "{text:?}: {}", e.message);
        }
    }

    #[test]
    fn render_round_trips() {
        let mut ini = Ini::default();
        ini.set("DEFAULT", "a", "1");
        ini.set("x", "multi", "p\nq");
        ini.set("DEFAULT", "a", "2");
        let text = ini.to_string();
        assert_eq!(Ini::parse(&text).unwrap(), ini);
        assert!(text.starts_with("[DEFAULT]\na = 2\n"));
    }
}
