//! A Redfish error response in plain words. The standard envelope is
//! `{"error": {"code", "message", "@Message.ExtendedInfo": [{"MessageId",
//! "Message", "MessageArgs", "RelatedProperties", "Resolution"}]}}`, but BMCs
//! fill it in unevenly: sushy-tools puts the text only in `error.message`,
//! HPE iLO gives only a `MessageId`, and some answers are plain text or HTML
//! sent as `application/json`. [`RedfishError`] keeps what is there, so the
//! quirk handlers can tell which property a BMC complained about.

use serde_json::Value;
use std::fmt;

/// An HTTP error status from the BMC. Callers branch on the status, the
/// message ids and the properties named (that is how quirks are detected).
#[derive(Debug, Clone, thiserror::Error)]
pub struct RedfishError {
    pub method: String,
    pub path: String,
    pub status: u16,
    /// Human-readable messages, most specific first.
    pub messages: Vec<String>,
    /// `MessageId`s (and `error.code`), e.g. `Base.1.8.PropertyUnknown`.
    pub message_ids: Vec<String>,
    /// `RelatedProperties` and `MessageArgs`: the property names a message is about.
    pub properties: Vec<String>,
}

impl RedfishError {
    /// Parse an error response body.
    pub fn from_body(method: &str, path: &str, status: u16, body: &str) -> RedfishError {
        let mut e = RedfishError {
            method: method.to_string(),
            path: path.to_string(),
            status,
            messages: Vec::new(),
            message_ids: Vec::new(),
            properties: Vec::new(),
        };
        match serde_json::from_str::<Value>(body) {
            Ok(v) if v.get("error").is_some() => e.read_envelope(&v["error"]),
            _ => {
                let text = plain_text(body);
                if !text.is_empty() {
                    e.messages.push(text);
                }
            }
        }
        e
    }

    /// Without the password and without control characters, so it can be
    /// printed (the client does this to every error it returns).
    pub fn cleaned(mut self, r: &super::untrusted::Redactor) -> RedfishError {
        self.path = r.clean(&self.path);
        for list in [
            &mut self.messages,
            &mut self.message_ids,
            &mut self.properties,
        ] {
            list.iter_mut().for_each(|m| *m = r.clean(m));
        }
        self
    }

    fn read_envelope(&mut self, err: &Value) {
        let infos = err["@Message.ExtendedInfo"].as_array().cloned();
        for info in infos.iter().flatten() {
            if let Some(m) = info["Message"].as_str().filter(|m| !m.trim().is_empty()) {
                self.messages.push(m.trim().to_string());
            }
            if let Some(id) = info["MessageId"].as_str() {
                self.message_ids.push(id.to_string());
            }
            for key in ["RelatedProperties", "MessageArgs"] {
                for p in info[key].as_array().into_iter().flatten() {
                    if let Some(p) = p.as_str() {
                        self.properties
                            .push(p.trim_start_matches("#/").trim_start_matches('/').into());
                    }
                }
            }
        }
        // `error.message` is often only "See ExtendedInfo for more
        // information"; it is worth showing when nothing better was given.
        if let Some(m) = err["message"].as_str().filter(|m| !m.trim().is_empty()) {
            let generic = m.contains("ExtendedInfo");
            if self.messages.is_empty() || !generic {
                self.messages.push(m.trim().to_string());
            }
        }
        if let Some(code) = err["code"].as_str() {
            self.message_ids.push(code.to_string());
        }
        // iLO: a MessageId and nothing else. Its last part names the problem.
        if self.messages.iter().all(|m| m.contains("ExtendedInfo")) {
            let words: Vec<String> = self
                .message_ids
                .iter()
                .filter_map(|id| id.rsplit('.').next())
                .filter(|w| !matches!(*w, "GeneralError" | "ExtendedInfo"))
                .map(spaced)
                .collect();
            if !words.is_empty() {
                self.messages = words;
            }
        }
    }

    /// Whether a message, message id or named property mentions `word`
    /// (case-sensitive: Redfish property names are capitalised).
    pub fn mentions(&self, word: &str) -> bool {
        self.properties
            .iter()
            .any(|p| p == word || p.ends_with(&format!("/{word}")))
            || self.message_ids.iter().any(|m| m.contains(word))
            || self.messages.iter().any(|m| {
                m.split(|c: char| !c.is_ascii_alphanumeric())
                    .any(|w| w == word)
            })
    }

    /// Whether a message id ends with `.name` (registry versions differ).
    pub fn has_message_id(&self, name: &str) -> bool {
        self.message_ids
            .iter()
            .any(|m| m == name || m.ends_with(&format!(".{name}")))
    }

    /// The messages as one sentence-ish line.
    pub fn summary(&self) -> String {
        if self.messages.is_empty() {
            "(no message)".to_string()
        } else {
            self.messages.join("; ")
        }
    }

    pub fn is_server_error(&self) -> bool {
        self.status >= 500
    }
}

impl fmt::Display for RedfishError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let reason = reqwest::StatusCode::from_u16(self.status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("");
        write!(
            f,
            "the BMC answered {} {reason} to {} {}: {}",
            self.status,
            self.method,
            self.path,
            self.summary()
        )
    }
}

/// A non-JSON body (plain text, an HTML error page) as one short line.
fn plain_text(body: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in body.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    let words: Vec<&str> = out.split_whitespace().collect();
    let mut line = words.join(" ");
    if line.len() > 300 {
        let cut = (0..=300)
            .rev()
            .find(|&i| line.is_char_boundary(i))
            .unwrap_or(0);
        line.truncate(cut);
        line.push('…');
    }
    line
}

/// `UnableToModifyDuringSystemPOST` → "unable to modify during system POST".
fn spaced(id: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = id.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
        let prev_lower = i > 0 && chars[i - 1].is_lowercase();
        if i > 0 && c.is_uppercase() && (prev_lower || next_lower) {
            out.push(' ');
        }
        out.push(c);
    }
    // Keep acronyms (POST, BIOS) as they are, lower-case the rest.
    out.split(' ')
        .map(|w| {
            if w.len() > 1 && w.chars().all(|c| c.is_uppercase()) {
                w.to_string()
            } else {
                w.to_lowercase()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = format!(
            "{}/tests/fixtures/redfish/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn extended_info_messages_and_properties() {
        let e = RedfishError::from_body(
            "POST",
            "/x",
            400,
            &fixture("quirks/a-supermicro-insert-inserted-rejected.400.json"),
        );
        assert_eq!(
            e.summary(),
            "The property Inserted is not in the list of valid properties for the resource."
        );
        assert!(e.mentions("Inserted"));
        assert!(!e.mentions("WriteProtected"));
        assert!(e.has_message_id("PropertyUnknown"));
        assert!(
            e.to_string()
                .starts_with("the BMC answered 400 Bad Request to POST /x: The property")
        );
    }

    #[test]
    fn sushy_tools_text_is_in_error_message_only() {
        let e = RedfishError::from_body(
            "GET",
            "/redfish/v1/Systems",
            401,
            &fixture("sushy/auth-wrong-password.401.json"),
        );
        assert_eq!(e.summary(), "Incorrect username or password");
    }

    #[test]
    fn ilo_message_id_only_is_spelled_out() {
        let e = RedfishError::from_body(
            "PATCH",
            "/s",
            400,
            &fixture("quirks/f-hpe-ilo-boot-patch-during-post.400.json"),
        );
        assert_eq!(e.summary(), "unable to modify during system POST");
        assert!(e.has_message_id("UnableToModifyDuringSystemPOST"));
        let e = RedfishError::from_body(
            "POST",
            "/e",
            415,
            &fixture("quirks/c-hpe-ilo-eject-without-body.415.json"),
        );
        assert_eq!(e.summary(), "unsupported media type");
    }

    #[test]
    fn plain_text_and_html_bodies() {
        let e = RedfishError::from_body(
            "PATCH",
            "/s",
            400,
            "Missing the BootSourceOverrideTarget and/or BootSourceOverrideMode element",
        );
        assert!(
            e.summary()
                .starts_with("Missing the BootSourceOverrideTarget")
        );
        assert!(e.mentions("BootSourceOverrideTarget"));
        let e = RedfishError::from_body(
            "GET",
            "/s",
            500,
            "<!doctype html>\n<html><head><title>500 Internal Server Error</title></head>\n<body><h1>Internal Server Error</h1><p>The server encountered an internal error.</p></body></html>",
        );
        assert_eq!(
            e.summary(),
            "500 Internal Server Error Internal Server Error The server encountered an internal error."
        );
        let e = RedfishError::from_body("GET", "/s", 503, "");
        assert_eq!(e.summary(), "(no message)");
    }

    #[test]
    fn generic_message_is_dropped_when_extended_info_says_more() {
        let e = RedfishError::from_body(
            "POST",
            "/i",
            500,
            &fixture("quirks/d-dell-idrac-insert-while-eject-in-progress.500.json"),
        );
        assert_eq!(e.messages.len(), 2, "{:?}", e.messages);
        assert!(!e.summary().contains("See ExtendedInfo"));
        assert!(e.is_server_error());
    }
}
