//! Text that came from a BMC, made safe to print and to log. A BMC (or
//! whatever answers in its place) chooses every byte of its answers: an
//! escape sequence in a system's name would drive the operator's terminal,
//! a newline would forge a log line, and an error message may echo the
//! password dcn sent. [`Redactor::clean`] replaces the password (and the
//! forms it travels in) with `[redacted]`, then [`terminal_safe`] escapes
//! control characters while keeping printable Unicode as it is.
//!
//! The client applies this to every string of every answer it parses, so
//! the rest of `bmc` can print what it reads. The escaping is
//! [`crate::terminal_text::sanitize`], as for bundle text.

use crate::secrets::Secret;
use base64::Engine;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt::Write;

/// What a redacted secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// `text` with every character that could act on a terminal (controls,
/// bidirectional and invisible characters) written as a Rust escape.
pub use crate::terminal_text::sanitize as terminal_safe;

/// Removes the BMC credentials from text that came from the BMC.
#[derive(Clone)]
pub struct Redactor {
    /// The forms the password may come back in, longest first.
    needles: Vec<Secret>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} forms)", self.needles.len())
    }
}

impl Redactor {
    /// The password as sent, and the forms a BMC may echo it in: the
    /// Basic-auth token (`base64(user:password)`, padded or not, standard or
    /// URL-safe alphabet), and the password JSON-, HTML- or percent-escaped.
    pub fn new(username: &str, password: &Secret) -> Redactor {
        let pw = password.expose();
        let mut forms: Vec<String> = Vec::new();
        if !pw.is_empty() {
            let pair = format!("{username}:{pw}");
            use base64::engine::general_purpose::{
                STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD,
            };
            for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
                forms.push(engine.encode(&pair));
            }
            forms.push(pw.to_string());
            let json = serde_json::to_string(pw).expect("a string serialises");
            forms.push(json[1..json.len() - 1].to_string());
            forms.push(html_escaped(pw));
            forms.push(percent_escaped(pw));
        }
        forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
        forms.dedup();
        Redactor {
            needles: forms.into_iter().map(Secret::new).collect(),
        }
    }

    /// `text` without the password in any of its forms.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut text = Cow::Borrowed(text);
        for n in &self.needles {
            if text.contains(n.expose()) {
                text = Cow::Owned(text.replace(n.expose(), REDACTED));
            }
        }
        text
    }

    /// Redacted, then made safe for a terminal.
    pub fn clean(&self, text: &str) -> String {
        terminal_safe(&self.redact(text)).into_owned()
    }

    /// Clean every string in a parsed answer (object keys too: serde
    /// matches them against the names dcn knows, and those are plain).
    pub fn clean_value(&self, v: &mut Value) {
        match v {
            Value::String(s) => *s = self.clean(s),
            Value::Array(a) => a.iter_mut().for_each(|x| self.clean_value(x)),
            Value::Object(o) => {
                let unsafe_keys: Vec<String> =
                    o.keys().filter(|k| self.clean(k) != **k).cloned().collect();
                for k in unsafe_keys {
                    if let Some(x) = o.remove(&k) {
                        o.insert(self.clean(&k), x);
                    }
                }
                o.values_mut().for_each(|x| self.clean_value(x));
            }
            _ => {}
        }
    }
}

fn html_escaped(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

fn percent_escaped(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn control_characters_are_escaped_and_unicode_kept() {
        assert_eq!(terminal_safe("Système № 1 ✓"), "Système № 1 ✓");
        assert!(matches!(terminal_safe("plain"), Cow::Borrowed(_)));
        assert_eq!(
            terminal_safe("\u{1b}]0;pwned\u{7}\u{1b}[2Jok"),
            "\\u{1b}]0;pwned\\u{7}\\u{1b}[2Jok"
        );
        assert_eq!(
            terminal_safe("a\r\nb\tc\u{8}\u{7f}\u{9b}"),
            "a\\r\\nb\\tc\\u{8}\\u{7f}\\u{9b}"
        );
        // Trojan-source style reordering and invisible characters.
        assert_eq!(
            terminal_safe("On\u{202e}ffO\u{200b}\u{2028}"),
            "On\\u{202e}ffO\\u{200b}\\u{2028}"
        );
    }

    #[test]
    fn the_password_is_redacted_in_every_form_it_travels_in() {
        let pw = Secret::new("p&ss\"w/rd<1>");
        let r = Redactor::new("admin", &pw);
        let basic = base64::engine::general_purpose::STANDARD.encode("admin:p&ss\"w/rd<1>");
        for echoed in [
            "Invalid password p&ss\"w/rd<1> for admin".to_string(),
            format!("Authorization: Basic {basic}"),
            format!("token {}", basic.trim_end_matches('=')),
            "json p&ss\\\"w/rd<1> end".to_string(),
            "html p&amp;ss&quot;w/rd&lt;1&gt; end".to_string(),
            "url p%26ss%22w%2Frd%3C1%3E end".to_string(),
        ] {
            let out = r.clean(&echoed);
            assert!(out.contains(REDACTED), "{echoed} -> {out}");
            assert!(!out.contains("ss\"w") && !out.contains("ss&quot;"), "{out}");
            assert!(!out.contains(basic.trim_end_matches('=')), "{out}");
        }
        assert_eq!(r.clean("nothing secret"), "nothing secret");
        // An empty password redacts nothing (rather than everything).
        assert_eq!(Redactor::new("admin", &Secret::new("")).clean("abc"), "abc");
    }

    #[test]
    fn every_string_of_an_answer_is_cleaned() {
        let r = Redactor::new("admin", &Secret::new("hunter22"));
        let mut v = json!({
            "Name": "\u{1b}[31mred",
            "Members": [{"@odata.id": "/a\nb"}],
            "error": {"message": "bad password hunter22"},
            "Power\u{1b}": 3,
        });
        r.clean_value(&mut v);
        assert_eq!(v["Name"], "\\u{1b}[31mred");
        assert_eq!(v["Members"][0]["@odata.id"], "/a\\nb");
        assert_eq!(v["error"]["message"], "bad password [redacted]");
        assert_eq!(v["Power\\u{1b}"], 3);
        assert!(!v.to_string().contains("hunter22"));
    }
}
