//! Join tokens: `<id>.<secret>`, like kubeadm's bootstrap tokens but with a
//! longer secret. The id is public (it names the token in logs and on the
//! control plane); the secret authenticates the joining host to the join
//! service, which stores only [`JoinToken::hash`].

use crate::secrets::{Secret, random_string};
use std::str::FromStr;

/// Characters of both parts: lowercase letters and digits, so a token is
/// easy to read aloud and needs no quoting anywhere.
const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// Length of the public id.
pub const TOKEN_ID_LENGTH: usize = 6;

/// Length of the secret: 32 characters of 36 is about 165 bits.
pub const TOKEN_SECRET_LENGTH: usize = 32;

/// A join token. `Debug` shows the id and redacts the secret; there is no
/// `Display`, so the full token is only ever written on purpose, through
/// [`JoinToken::expose_full`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinToken {
    /// The public id: 6 characters of `[a-z0-9]`.
    pub id: String,
    /// The secret: 32 characters of `[a-z0-9]`.
    pub secret: Secret,
}

/// Why a token does not parse. Messages never contain the secret part.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error(
        "a join token looks like <6 characters>.<32 characters> (lowercase letters and digits), but this one has no '.'"
    )]
    NoSeparator,
    #[error("the token id before the '.' has {0} characters; it must have {TOKEN_ID_LENGTH}")]
    IdLength(usize),
    #[error("the token id {0:?} may hold only lowercase letters and digits")]
    IdCharacters(String),
    #[error(
        "the token secret after the '.' has {0} characters; it must have {TOKEN_SECRET_LENGTH}"
    )]
    SecretLength(usize),
    #[error(
        "the token secret has a character other than a lowercase letter or digit at position {0}"
    )]
    SecretCharacters(usize),
}

impl JoinToken {
    /// A new random token from the OS CSPRNG.
    pub fn generate() -> JoinToken {
        JoinToken {
            id: random_string(TOKEN_ID_LENGTH, ALPHABET),
            secret: Secret::new(random_string(TOKEN_SECRET_LENGTH, ALPHABET)),
        }
    }

    /// The full token text, `<id>.<secret>`, for the bundle's `token`
    /// member. Keep it out of logs and messages.
    pub fn expose_full(&self) -> String {
        format!("{}.{}", self.id, self.secret.expose())
    }

    /// `<id>.<redacted>`, for showing which token this is.
    pub fn redacted(&self) -> String {
        format!("{}.<redacted>", self.id)
    }

    /// `sha256:<hex>` of the full token text: what the control plane keeps
    /// instead of the token, to check a presented token without storing it.
    pub fn hash(&self) -> String {
        crate::secrets::stored_hash(&self.expose_full())
    }
}

/// Check a token id (also used for the manifest's `tokenId`).
pub fn check_id(id: &str) -> Result<(), TokenError> {
    if id.len() != TOKEN_ID_LENGTH {
        return Err(TokenError::IdLength(id.chars().count()));
    }
    if !id.bytes().all(is_token_char) {
        return Err(TokenError::IdCharacters(id.to_string()));
    }
    Ok(())
}

fn is_token_char(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

impl FromStr for JoinToken {
    type Err = TokenError;

    fn from_str(s: &str) -> Result<JoinToken, TokenError> {
        let (id, secret) = s.split_once('.').ok_or(TokenError::NoSeparator)?;
        check_id(id)?;
        if secret.len() != TOKEN_SECRET_LENGTH {
            return Err(TokenError::SecretLength(secret.chars().count()));
        }
        if let Some(pos) = secret.bytes().position(|b| !is_token_char(b)) {
            return Err(TokenError::SecretCharacters(pos + 1));
        }
        Ok(JoinToken {
            id: id.to_string(),
            secret: Secret::new(secret),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "0123456789abcdefghijklmnopqrstuv";

    #[test]
    fn generated_tokens_parse_back_and_differ() {
        let t = JoinToken::generate();
        assert_eq!(t.id.len(), TOKEN_ID_LENGTH);
        assert_eq!(t.secret.expose().len(), TOKEN_SECRET_LENGTH);
        assert_eq!(t.expose_full().parse::<JoinToken>().unwrap(), t);
        assert_ne!(JoinToken::generate(), t);
    }

    #[test]
    fn debug_and_redacted_hide_the_secret() {
        let t: JoinToken = format!("abc123.{SECRET}").parse().unwrap();
        let debug = format!("{t:?}");
        assert!(
            debug.contains("abc123") && debug.contains("<redacted>"),
            "{debug}"
        );
        assert!(!debug.contains(SECRET), "{debug}");
        assert_eq!(t.redacted(), "abc123.<redacted>");
    }

    #[test]
    fn hash_is_sha256_of_the_full_text() {
        let t: JoinToken = format!("abc123.{SECRET}").parse().unwrap();
        let expected = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(format!(
            "abc123.{SECRET}"
        )));
        assert_eq!(t.hash(), format!("sha256:{expected}"));
        assert!(!t.hash().contains(SECRET));
    }

    #[test]
    fn bad_tokens_are_refused_without_echoing_the_secret() {
        let cases = [
            ("abc123".to_string(), "no '.'"),
            (
                format!("abc12.{SECRET}"),
                "has 5 characters; it must have 6",
            ),
            (format!("ABC123.{SECRET}"), "may hold only lowercase"),
            (
                format!("abc123.{}", &SECRET[1..]),
                "has 31 characters; it must have 32",
            ),
            (format!("abc123.{}X", &SECRET[1..]), "at position 32"),
            (format!("abc123.{SECRET}\n"), "has 33 characters"),
            (format!("abc123.{}.", &SECRET[1..]), "at position 32"),
        ];
        for (input, expected) in cases {
            let err = input.parse::<JoinToken>().unwrap_err().to_string();
            assert!(err.contains(expected), "{input:?}: {err}");
            assert!(!err.contains(&SECRET[1..]), "{err}");
        }
    }
}
