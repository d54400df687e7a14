//! Fresh challenges for a re-join's proof of possession. A host that
//! joined before must show that it holds its key *now*, not only a CSR that
//! anyone may have kept: it signs a challenge the service made moments ago
//! ([`crate::wire::proof_message`]).
//!
//! Challenges are stateless until used: each carries its expiry and a MAC
//! under a key the service makes when it starts (a restart voids the ones
//! out, and the node asks again). A challenge whose proof was accepted is
//! remembered until it expires, so a proof cannot be replayed; the memory
//! holds only accepted proofs of the last [`VALIDITY`], which the rate
//! limit and the need for a node key bound.

#[cfg(test)]
use crate::wire::{Challenge, prove};
use crate::wire::{KeyProof, proof_message};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long a challenge may be answered.
pub const VALIDITY: Duration = Duration::from_secs(120);

const NONCE: usize = 16;
const TAG: usize = 32;

/// Why a proof is not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    #[error(
        "the challenge was not made by this join service (or it restarted since): ask for a new one"
    )]
    Unknown,
    #[error("the challenge expired: ask for a new one")]
    Expired,
    #[error("the challenge was used already: ask for a new one")]
    Used,
    #[error("the signature is not the CSR key's over the challenge, host name and token")]
    BadSignature,
}

/// The service's challenges.
pub struct Challenges {
    key: ring::hmac::Key,
    /// Nonces of accepted proofs, with their expiry (UNIX seconds).
    used: Mutex<HashMap<[u8; NONCE], u64>>,
}

impl Default for Challenges {
    fn default() -> Challenges {
        Challenges::new()
    }
}

impl Challenges {
    pub fn new() -> Challenges {
        let rng = ring::rand::SystemRandom::new();
        Challenges {
            key: ring::hmac::Key::generate(ring::hmac::HMAC_SHA256, &rng)
                .expect("the system's random source"),
            used: Mutex::new(HashMap::new()),
        }
    }

    /// A new challenge, valid for [`VALIDITY`] from `now`.
    pub fn issue(&self, now: SystemTime) -> crate::wire::Challenge {
        let expires = unix(now) + VALIDITY.as_secs();
        let mut nonce = [0u8; NONCE];
        getrandom::fill(&mut nonce).expect("the system's random source");
        let mut bytes = expires.to_be_bytes().to_vec();
        bytes.extend_from_slice(&nonce);
        let tag = ring::hmac::sign(&self.key, &bytes);
        bytes.extend_from_slice(tag.as_ref());
        crate::wire::Challenge {
            challenge: URL_SAFE_NO_PAD.encode(bytes),
            expires_in: VALIDITY.as_secs(),
        }
    }

    /// Accept `proof` for `hostname` and `token_id`, signed by the key of
    /// the raw P-256 public key `public_key` (from the CSR), at `now`: the
    /// challenge is this service's, unexpired and unused, and the signature
    /// verifies. Only then is the challenge spent.
    pub fn accept(
        &self,
        proof: &KeyProof,
        hostname: &str,
        token_id: &str,
        public_key: &[u8],
        now: SystemTime,
    ) -> Result<(), ProofError> {
        let bytes = URL_SAFE_NO_PAD
            .decode(proof.challenge.as_bytes())
            .map_err(|_| ProofError::Unknown)?;
        if bytes.len() != 8 + NONCE + TAG {
            return Err(ProofError::Unknown);
        }
        let (body, tag) = bytes.split_at(8 + NONCE);
        // In constant time: a forger learns nothing from how long it takes.
        ring::hmac::verify(&self.key, body, tag).map_err(|_| ProofError::Unknown)?;
        let expires = u64::from_be_bytes(body[..8].try_into().expect("8 bytes"));
        let now = unix(now);
        if now >= expires {
            return Err(ProofError::Expired);
        }
        let nonce: [u8; NONCE] = body[8..].try_into().expect("NONCE bytes");
        let signature = base64::engine::general_purpose::STANDARD
            .decode(proof.signature.as_bytes())
            .map_err(|_| ProofError::BadSignature)?;
        let message = proof_message(&proof.challenge, hostname, token_id);
        ring::signature::UnparsedPublicKey::new(
            &ring::signature::ECDSA_P256_SHA256_ASN1,
            public_key,
        )
        .verify(&message, &signature)
        .map_err(|_| ProofError::BadSignature)?;
        let mut used = self.used.lock().expect("the challenge list");
        used.retain(|_, exp| *exp > now);
        if used.insert(nonce, expires).is_some() {
            return Err(ProofError::Used);
        }
        Ok(())
    }
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::PublicKeyData;

    fn key() -> rcgen::KeyPair {
        rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap()
    }

    #[test]
    fn a_fresh_signed_challenge_is_accepted_once() {
        let c = Challenges::new();
        let k = key();
        let now = SystemTime::now();
        let challenge = c.issue(now);
        let proof = prove(&k, &challenge, "edge1-n1", "tok1").unwrap();
        assert_eq!(
            c.accept(&proof, "edge1-n1", "tok1", k.der_bytes(), now),
            Ok(())
        );
        assert_eq!(
            c.accept(&proof, "edge1-n1", "tok1", k.der_bytes(), now),
            Err(ProofError::Used),
            "a proof is not replayed"
        );
    }

    #[test]
    fn proofs_for_another_host_token_key_or_service_are_refused() {
        let c = Challenges::new();
        let k = key();
        let now = SystemTime::now();
        let challenge = c.issue(now);
        let proof = prove(&k, &challenge, "edge1-n1", "tok1").unwrap();
        let refused =
            |host: &str, token: &str, public: &[u8]| c.accept(&proof, host, token, public, now);
        assert_eq!(
            refused("edge1-n2", "tok1", k.der_bytes()),
            Err(ProofError::BadSignature)
        );
        assert_eq!(
            refused("edge1-n1", "tok2", k.der_bytes()),
            Err(ProofError::BadSignature)
        );
        assert_eq!(
            refused("edge1-n1", "tok1", key().der_bytes()),
            Err(ProofError::BadSignature)
        );
        // None of the refusals spent it.
        assert_eq!(refused("edge1-n1", "tok1", k.der_bytes()), Ok(()));
        // Another service (or this one restarted) made its own key.
        let other = Challenges::new();
        let proof = prove(&k, &c.issue(now), "edge1-n1", "tok1").unwrap();
        assert_eq!(
            other.accept(&proof, "edge1-n1", "tok1", k.der_bytes(), now),
            Err(ProofError::Unknown)
        );
    }

    #[test]
    fn expired_forged_and_malformed_challenges_are_refused() {
        let c = Challenges::new();
        let k = key();
        let then = SystemTime::now() - VALIDITY - Duration::from_secs(1);
        let proof = prove(&k, &c.issue(then), "h", "t").unwrap();
        assert_eq!(
            c.accept(&proof, "h", "t", k.der_bytes(), SystemTime::now()),
            Err(ProofError::Expired)
        );
        // A later expiry written over a real challenge breaks its MAC.
        let mut bytes = URL_SAFE_NO_PAD.decode(&proof.challenge).unwrap();
        bytes[..8].copy_from_slice(&u64::MAX.to_be_bytes());
        let forged = Challenge {
            challenge: URL_SAFE_NO_PAD.encode(&bytes),
            expires_in: 0,
        };
        let proof = prove(&k, &forged, "h", "t").unwrap();
        assert_eq!(
            c.accept(&proof, "h", "t", k.der_bytes(), SystemTime::now()),
            Err(ProofError::Unknown)
        );
        for junk in ["", "!!", "AAAA", &"A".repeat(10_000)] {
            let proof = KeyProof {
                challenge: junk.into(),
                signature: "AAAA".into(),
            };
            assert_eq!(
                c.accept(&proof, "h", "t", k.der_bytes(), SystemTime::now()),
                Err(ProofError::Unknown)
            );
        }
    }
}
