//! oslo.config-style INI text: parsing with line-numbered errors (an
//! operator's `customServiceConfig` is checked before anything changes) and
//! rendering of generated config files.
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
        // `lines` ends lines at `\n` and `\r\n`, as Python does once every
        // other line break is refused.
        for (idx, raw) in text.lines().enumerate() {
            let line = idx + 1;
            let err = |message: String| IniError { line, message };
            check_characters(raw).map_err(err)?;
            let trimmed = raw.trim();
            if trimmed.is_empty() {
                last_entry = false;
                continue;
            }
            // Indented: oslo.config continues the previous option, even
            // with a `#`, and refuses the line when there is none.
            if raw.starts_with([' ', '\t']) {
                if !last_entry {
                    return Err(err(format!(
                        "{trimmed:?} is indented but continues no option (oslo.config refuses it as an unexpected continuation line); remove the indentation"
                    )));
                }
                let section = ini.sections.last_mut().expect("an entry implies a section");
                let entry = section.entries.last_mut().expect("last_entry is set");
                entry.value.push('\n');
                entry.value.push_str(trimmed);
                continue;
            }
            last_entry = false;
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
            ("[a]\n= x\n", 2, "invalid option name"),
        ];
        for (text, line, msg) in cases {
            let e = Ini::parse(text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}");
            assert!(e.message.contains(msg), "{text:?}: {}", e.message);
        }
    }

    #[test]
    fn line_breaks_and_spaces_oslo_config_reads_differently_are_refused() {
        // oslo.config reads `debug = true\r[database]\rconnection = …` as a
        // [database] section; dcn used to see one `debug` option.
        let bare_cr = "[DEFAULT]\ndebug = true\r[database]\rconnection = mysql://evil\n";
        let e = Ini::parse(bare_cr).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(
            e.message
                .contains("carriage return (\\r) not followed by a line feed")
                && e.message.contains("end lines with \\n"),
            "{e}"
        );
        // Python's universal newlines and str.strip()/splitlines() act on
        // these; each is refused with its code point.
        for c in [
            '\x0b', '\x0c', '\x1c', '\x1d', '\x1e', '\x1f', '\u{85}', '\u{2028}', '\u{2029}',
            '\u{a0}', '\x00', '\x1b', '\x7f',
        ] {
            for text in [
                format!("[DEFAULT]\ndebug = true{c}[database]\n"),
                format!("[DEFAULT]\n{c}[database]\n"),
                format!("[DEFAULT]{c}\n"),
            ] {
                let e = Ini::parse(&text).unwrap_err();
                let code = format!("U+{:04X}", u32::from(c));
                assert!(e.line == 1 || e.line == 2, "{text:?}: {e}");
                assert!(e.message.contains(&code), "{text:?}: {e}");
            }
        }
        // \r\n line ends and tabs are fine.
        let ini = Ini::parse("[DEFAULT]\r\ndebug =\ttrue\r\n\tmore\r\n").unwrap();
        assert_eq!(ini.get("DEFAULT", "debug"), Some("true\nmore"));
    }

    #[test]
    fn indentation_and_section_names_mean_what_they_mean_to_oslo_config() {
        // Indented lines continue the previous option, comment or not.
        let ini = Ini::parse("[DEFAULT]\na = 1\n  # not a comment\n").unwrap();
        assert_eq!(ini.get("DEFAULT", "a"), Some("1\n# not a comment"));
        for (text, line, msg) in [
            ("[DEFAULT]\n  debug = true\n", 2, "continues no option"),
            ("[DEFAULT]\na = 1\n# c\n  b = 2\n", 4, "continues no option"),
            ("[DEFAULT]\na = 1\n\n  b = 2\n", 4, "continues no option"),
            (
                "[ database ]\nconnection = x\n",
                1,
                "spaces inside its brackets",
            ),
        ] {
            let e = Ini::parse(text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.message.contains(msg), "{text:?}: {e}");
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
