//! A YAML document parsed into a typed value, with errors that name the
//! file, line, column and field: what every config file, recipe and bundle
//! manifest is read through.

use crate::terminal_text::sanitize;
use serde::de::DeserializeOwned;
use std::fmt;

/// A config file that does not parse or validate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    /// The file, or `<input>`.
    pub file: String,
    /// 1-based line and column, where known.
    pub line: Option<usize>,
    pub column: Option<usize>,
    /// Dotted path of the field, e.g. `controlPlane.address`.
    pub path: String,
    pub message: String,
}

impl ConfigError {
    /// An error at a field `path` of `file`, where no line is known (checks
    /// that run after parsing).
    pub fn at(file: &str, path: impl Into<String>, message: impl Into<String>) -> ConfigError {
        ConfigError {
            file: file.to_string(),
            line: None,
            column: None,
            path: path.into(),
            message: message.into(),
        }
    }

    /// An error at the key `path` of `text` with the key's line and column
    /// (checks that run after parsing, as the parser's errors have them).
    pub fn located(
        text: &str,
        file: &str,
        path: &[&str],
        message: impl Into<String>,
    ) -> ConfigError {
        let at = crate::yaml::locate(text, path);
        ConfigError {
            file: file.to_string(),
            line: at.map(|(line, _)| line),
            column: at.map(|(_, column)| column),
            path: path.join("."),
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
            if let Some(c) = self.column {
                write!(f, ":{c}")?;
            }
        }
        // The path and message can quote the file's keys and values.
        let message = sanitize(&self.message);
        if self.path.is_empty() || self.path == "." {
            write!(f, ": {message}")
        } else {
            write!(f, ": {}: {message}", sanitize(&self.path))
        }
    }
}

/// Parse `text` (named `file` in errors) into a config of type `T`, after
/// [`crate::yaml::check`] has bounded its size and nesting and refused
/// repeated keys.
pub fn parse<T: DeserializeOwned>(text: &str, file: &str) -> Result<T, ConfigError> {
    check_limits(text, file)?;
    let de = serde_yaml::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let loc = inner.location();
        ConfigError {
            file: file.to_string(),
            line: loc.as_ref().map(|l| l.line()),
            column: loc.as_ref().map(|l| l.column()),
            path: if path == "?" { String::new() } else { path },
            message: clean_message(&inner.to_string()),
        }
    })
}

/// [`crate::yaml::check`] as a [`ConfigError`] naming `file`.
pub fn check_limits(text: &str, file: &str) -> Result<(), ConfigError> {
    crate::yaml::check(text).map_err(|e| ConfigError {
        file: file.to_string(),
        line: e.line,
        column: e.column,
        path: String::new(),
        message: e.message,
    })
}

/// serde_yaml prefixes nested errors with its own path ("a.b: ") and
/// appends " at line L column C"; ours already says both.
fn clean_message(msg: &str) -> String {
    let msg = match msg.find(" at line ") {
        Some(i) => &msg[..i],
        None => msg,
    };
    match msg.split_once(": ") {
        Some((prefix, rest))
            if !prefix.is_empty()
                && prefix
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._[]-".contains(c)) =>
        {
            rest.to_string()
        }
        _ => msg.to_string(),
    }
}
