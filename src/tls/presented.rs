//! What a server presented in its last handshake ([`Presented`]), recorded
//! by the verifiers so that a refusal can name the key it saw, and the
//! error of a key that is not the pinned one.

use crate::pki::Pin;
use std::sync::{Arc, Mutex};

/// What the server presented in the last handshake, kept by the verifier so
/// that an error can name the key of a refused server.
#[derive(Debug, Clone, Default)]
pub struct Presented(Arc<Mutex<Option<PresentedCert>>>);

/// The server's end-entity certificate and the verdict on it.
#[derive(Debug, Clone)]
pub struct PresentedCert {
    /// DER of the end-entity certificate.
    pub der: Vec<u8>,
    /// Its public-key pin; `None` when the certificate does not parse.
    pub pin: Option<Pin>,
    /// Why it was refused; `None` when it was accepted.
    pub refused: Option<String>,
}

impl Presented {
    /// The last certificate seen, if a handshake got that far.
    pub fn last(&self) -> Option<PresentedCert> {
        self.0.lock().unwrap().clone()
    }

    pub(super) fn record(&self, der: &[u8], refused: Option<String>) {
        *self.0.lock().unwrap() = Some(PresentedCert {
            der: der.to_vec(),
            pin: Pin::of_cert_der(der).ok(),
            refused,
        });
    }
}

/// The server's key is not the pinned one.
#[derive(Debug, thiserror::Error)]
#[error("the server's public key is {presented}, not the pinned {expected}")]
pub struct PinMismatch {
    pub expected: Pin,
    pub presented: Pin,
}
