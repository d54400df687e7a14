//! What the client's `send` and `get` return when a request got no
//! successful answer: the BMC's error answer, a refused login, or anything
//! else, so the vendor workarounds match on a case instead of downcasting.

use super::super::error::RedfishError;

/// Why a request got no successful answer. The vendor workarounds look at
/// what the BMC answered ([`SendError::answer`]); everything else they pass
/// on, so it is one case.
#[derive(Debug)]
pub enum SendError {
    /// The BMC answered 4xx or 5xx.
    Answered(Box<RedfishError>),
    /// The BMC refused the credentials (401); `check` says what to check.
    Login {
        check: String,
        answer: Box<RedfishError>,
    },
    /// No answer to look at: no connection, TLS refused, out of time, too
    /// large, a link elsewhere, or an answer that is not what was asked.
    Other(anyhow::Error),
}

impl SendError {
    /// What the BMC answered, when it answered with an error status.
    pub fn answer(&self) -> Option<&RedfishError> {
        match self {
            SendError::Answered(a) | SendError::Login { answer: a, .. } => Some(a),
            SendError::Other(_) => None,
        }
    }

    /// Whether the BMC answered with `status`.
    pub fn is_status(&self, status: u16) -> bool {
        self.answer().is_some_and(|a| a.status == status)
    }
}

// Written out rather than derived so that `{:#}` and the error chain read
// as they did when these were plain `anyhow` errors.
impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::Answered(a) => a.fmt(f),
            SendError::Login { check, answer } if f.alternate() => write!(f, "{check}: {answer}"),
            SendError::Login { check, .. } => f.write_str(check),
            SendError::Other(e) => std::fmt::Display::fmt(e, f),
        }
    }
}

impl std::error::Error for SendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SendError::Answered(_) => None,
            SendError::Login { answer, .. } => Some(answer.as_ref()),
            SendError::Other(e) => e.source(),
        }
    }
}
