//! Secrets: the [`Secret`] wrapper that never prints itself, password
//! generation from the OS CSPRNG, and the on-disk store of the control
//! plane's passwords (`/var/lib/dcn/secrets/passwords.yaml`).

use std::fmt;

/// A secret value. `Debug` prints `<redacted>` and there is no `Display`, so a
/// secret cannot reach a log line or an error message by accident; call
/// [`Secret::expose`] where the value really is needed (a file, stdin).
/// Serialising writes the value: for the join reply and the node's own
/// 0600 credentials file, never for anything that is logged.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Characters of generated passwords: letters and digits only, so a password
/// needs no escaping in an oslo.config URL (`mysql+pymysql://u:PW@host/db`),
/// an INI value, a shell word or a RabbitMQ URI.
const PASSWORD_ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// 32 characters of a 62-letter alphabet: about 190 bits.
pub const PASSWORD_LENGTH: usize = 32;

/// `sha256:<hex>` of a bearer secret (a join token, a node secret): what
/// the control plane keeps instead of the secret, to check one presented
/// to it without storing it.
pub fn stored_hash(secret: &str) -> String {
    use sha2::{Digest, Sha256};
    format!("sha256:{}", hex::encode(Sha256::digest(secret.as_bytes())))
}

/// A new random password from the OS CSPRNG.
pub fn generate_password() -> Secret {
    Secret(random_string(PASSWORD_LENGTH, PASSWORD_ALPHABET))
}

/// A random string over `alphabet`, drawn without modulo bias (bytes that
/// would bias the draw are rejected and redrawn).
pub fn random_string(len: usize, alphabet: &[u8]) -> String {
    assert!(!alphabet.is_empty() && alphabet.len() <= 256);
    let limit = 256 - (256 % alphabet.len());
    let mut out = String::with_capacity(len);
    let mut buf = [0u8; 64];
    while out.len() < len {
        getrandom::fill(&mut buf).expect("the OS random number generator failed");
        for &b in &buf {
            if (b as usize) < limit && out.len() < len {
                out.push(alphabet[b as usize % alphabet.len()] as char);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_long_url_safe_and_distinct() {
        let a = generate_password();
        let b = generate_password();
        assert_eq!(a.expose().len(), PASSWORD_LENGTH);
        assert!(a.expose().bytes().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(a, b);
    }

    #[test]
    fn secrets_do_not_debug_print() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s:?}"), "<redacted>");
        assert!(!format!("{:?}", Some(&s)).contains("hunter2"));
    }

    #[test]
    fn random_string_uses_whole_alphabet() {
        let s = random_string(4000, b"ab");
        assert!(s.contains('a') && s.contains('b'));
    }
}
