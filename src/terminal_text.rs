//! Untrusted text made safe to print on a terminal. A bundle, a
//! certificate or a config file can carry escape sequences (`\x1b[2J`
//! clears the screen, `\x1b]0;…` retitles the window), carriage returns
//! and newlines that overwrite or forge the lines around them, and Unicode
//! controls that reorder or hide text. [`sanitize`] escapes those and keeps
//! every printable character, so `dcn bundle inspect` shows what a bundle
//! holds, not what it wants shown. Text of any length, too: [`Table`]
//! lays out columns without format widths (which panic above 65,535) and
//! cuts each cell to its column's maximum.

mod table;

pub use table::{Column, Table, cell, cut, head, pad};

use std::borrow::Cow;
use std::fmt::Write;

/// `text` with control characters (C0, DEL, C1, newlines and tabs
/// included) and invisible Unicode formatting characters written as Rust
/// escapes (`\n`, `\u{1b}`, `\u{202e}`); everything else unchanged. The
/// result is one line.
pub fn sanitize(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if needs_escape(c) {
            // escape_debug writes \t, \n, \r and \u{…} for the rest.
            write!(out, "{}", c.escape_debug()).expect("writing to a String");
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c,
            // Bidirectional controls: they reorder what follows.
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
            // Zero-width characters and the byte order mark: invisible.
            | '\u{180e}' | '\u{200b}'..='\u{200d}' | '\u{2060}'..='\u{2064}' | '\u{feff}'
            // Line and paragraph separators.
            | '\u{2028}' | '\u{2029}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_escaped_and_printable_text_kept() {
        assert!(matches!(sanitize("edge1 café ✓"), Cow::Borrowed(_)));
        let cases = [
            ("\x1b[2J\x1b[31mred", "\\u{1b}[2J\\u{1b}[31mred"),
            ("\x1b]0;title\x07", "\\u{1b}]0;title\\u{7}"),
            ("a\r\nCA pin: forged", "a\\r\\nCA pin: forged"),
            ("tab\there", "tab\\there"),
            ("\u{9b}31m", "\\u{9b}31m"),
            ("\x7f\x00", "\\u{7f}\\0"),
            ("abc\u{202e}fdp.exe", "abc\\u{202e}fdp.exe"),
            ("zero\u{200b}width\u{feff}", "zero\\u{200b}width\\u{feff}"),
            ("line\u{2028}sep", "line\\u{2028}sep"),
        ];
        for (raw, shown) in cases {
            assert_eq!(sanitize(raw), shown, "{raw:?}");
            assert!(!sanitize(raw).chars().any(needs_escape));
        }
    }
}
