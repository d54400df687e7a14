//! YAML from files and bundles is bounded before serde_yaml reads it.
//!
//! libyaml, serde_yaml's parser, needs time that grows with the square of
//! the nesting depth of flow collections (`[[[[…`): a 256 KiB manifest of
//! brackets costs over a minute of CPU before any signature is checked. And
//! a mapping deserialised into a map keeps the last of repeated keys, so a
//! reader could be shown one value and use another. [`check`] walks the
//! same libyaml event stream serde_yaml will see (so both agree on what is
//! nested and what is quoted), stops at the first collection nested deeper
//! than [`MAX_DEPTH`], and refuses a key repeated within one mapping. Every
//! place dcn reads YAML from a file calls it first, through
//! [`crate::config::parse`] or [`from_str`]; [`read_file`] reads the file.

mod events;
mod locate;
pub mod parse;

pub use locate::locate;

use serde::de::DeserializeOwned;
use std::collections::HashMap;
use std::fmt;
use std::path::Path;

/// The largest YAML text accepted, in bytes: hundreds of times a real
/// config or manifest.
pub const MAX_BYTES: usize = 1024 * 1024;

/// The deepest nesting of collections accepted. dcn's files nest four or
/// five levels.
pub const MAX_DEPTH: usize = 32;

/// YAML text refused before parsing, with where, when known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct LimitError {
    /// 1-based.
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

impl fmt::Display for LimitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let (Some(l), Some(c)) = (self.line, self.column) {
            write!(f, "line {l} column {c}: ")?;
        }
        f.write_str(&self.message)
    }
}

/// Check `text` against [`MAX_BYTES`], [`MAX_DEPTH`] and repeated keys.
/// Syntax errors are left to the parser that follows, which reports them
/// with their line; it sees only what this check has already walked.
pub fn check(text: &str) -> Result<(), LimitError> {
    if text.len() > MAX_BYTES {
        return Err(LimitError {
            line: None,
            column: None,
            message: format!(
                "the YAML text is {} bytes, more than the limit of {MAX_BYTES}; a dcn file is a few kilobytes, so this is not one",
                text.len()
            ),
        });
    }
    let mut parser = events::Parser::new(text);
    let mut frames: Vec<Frame> = Vec::new();
    while let Some(event) = parser.next() {
        let at = |message: String| LimitError {
            line: Some(event.line),
            column: Some(event.column),
            message,
        };
        match event.kind {
            events::Kind::Start { mapping } => {
                if frames.len() >= MAX_DEPTH {
                    return Err(at(format!(
                        "collections are nested more than {MAX_DEPTH} levels deep; dcn's files nest a few levels, so this was not written for dcn"
                    )));
                }
                frames.push(Frame {
                    keys: mapping.then(HashMap::new),
                    expect_key: mapping,
                });
            }
            events::Kind::End => {
                frames.pop();
                node_done(&mut frames);
            }
            events::Kind::Scalar(value) => {
                if let Some(Frame {
                    keys: Some(keys),
                    expect_key: true,
                }) = frames.last_mut()
                    && let Some(first) = keys.insert(value.clone(), event.line)
                {
                    return Err(at(format!(
                        "the key {} appears twice in one mapping (first on line {first}); keep one, so that what dcn uses is what the file shows",
                        quoted(&value)
                    )));
                }
                node_done(&mut frames);
            }
            events::Kind::Alias => node_done(&mut frames),
            events::Kind::Other => {}
        }
    }
    Ok(())
}

/// An open collection: for a mapping, its keys so far (with their lines)
/// and whether its next node is a key.
struct Frame {
    keys: Option<HashMap<Vec<u8>, usize>>,
    expect_key: bool,
}

/// A node is complete: in a mapping, a key is followed by its value.
fn node_done(frames: &mut [Frame]) {
    if let Some(Frame {
        keys: Some(_),
        expect_key,
    }) = frames.last_mut()
    {
        *expect_key = !*expect_key;
    }
}

/// A key for a message: quoted, control characters escaped, cut short.
fn quoted(key: &[u8]) -> String {
    let text = String::from_utf8_lossy(key);
    let cut = crate::terminal_text::head(&text, 64);
    let more = if cut.len() < text.len() { "…" } else { "" };
    format!("{cut:?}{more}")
}

/// [`check`], then deserialise with serde_yaml.
pub fn from_str<T: DeserializeOwned>(text: &str) -> anyhow::Result<T> {
    check(text)?;
    Ok(serde_yaml::from_str(text)?)
}

/// Read a YAML file as UTF-8 text: a regular file of at most
/// [`MAX_BYTES`], read by [`crate::host::read`] (so a FIFO is refused
/// rather than waited on, and `/dev/zero` rather than read).
pub fn read_file(path: &Path) -> Result<String, crate::host::read::ReadError> {
    use crate::host::read::{ReadSpec, read_string};
    read_string(path, &ReadSpec::up_to(MAX_BYTES as u64))
}

#[cfg(test)]
mod tests;
