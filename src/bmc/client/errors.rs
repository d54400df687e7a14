//! The client's errors in plain words: which BMC, which request, what went
//! wrong, and what the operator can do.

use super::super::deadline::seconds;
use super::super::transport::{self, BodyError};
use super::{Client, Failure, Limit, Request};
use crate::tls::ServerTrust;
use anyhow::anyhow;

impl Client {
    pub(super) fn transport_error(
        &self,
        f: Failure,
        req: &Request,
        attempts: u32,
        limit: &Limit,
    ) -> anyhow::Error {
        let base = &self.base;
        let (method, path) = (req.method.as_str(), req.path);
        if let Some(p) = self.presented.last()
            && let Some(reason) = &p.refused
        {
            return anyhow!(self.tls_refusal(&self.redactor.clean(reason), p.pin.as_ref()));
        }
        let e = match f {
            Failure::Http(e) => e,
            Failure::Body(BodyError::Http(e)) => e,
            Failure::Body(BodyError::TimedOut { received }) => {
                return anyhow!(
                    "the BMC at {base} did not finish sending its answer to {method} {path} within {}: {} received by then; {}",
                    self.in_all(limit),
                    transport::size(received as u64),
                    self.way_out(limit)
                );
            }
            Failure::Body(BodyError::Io(e)) => {
                let e = self.redactor.clean(&e.to_string());
                return anyhow!("reading the answer of the BMC at {base} to {method} {path}: {e}");
            }
            Failure::Body(BodyError::TooLarge { announced }) => {
                return anyhow!(transport::too_large(base, method, path, announced));
            }
        };
        if let Some(r) = transport::redirect_refusal(&e) {
            return anyhow!(transport::redirect_refused(r, base, method, path));
        }
        let chain = self.redactor.clean(&error_chain(&e));
        if e.is_connect() {
            return anyhow!(
                "cannot connect to the BMC at {base} ({attempts} attempt(s)): {chain}; check the address and that this machine can reach the BMC's HTTPS port"
            );
        }
        if e.is_timeout() {
            return anyhow!(
                "the BMC at {base} did not answer {method} {path} within {}: no status and headers by then ({chain}); {}",
                self.in_all(limit),
                self.way_out(limit)
            );
        }
        anyhow!("{method} {path} on the BMC at {base}: {chain}")
    }

    /// The stretch ran out before a call could be sent.
    pub(super) fn no_time_left(&self, limit: &Limit, req: &Request) -> String {
        let d = &limit.deadline;
        format!(
            "{} {} on the BMC at {}: no time was left of {} ({}) to send it{}",
            req.method,
            req.path,
            self.base,
            d.what(),
            d.shown(),
            d.way_out()
        )
    }

    /// `30s in all`, or `3s in all, the time left of the install phase (60s)`.
    fn in_all(&self, limit: &Limit) -> String {
        let d = &limit.deadline;
        if limit.stretch {
            format!(
                "{} in all, the time left of {} ({})",
                seconds(limit.allowed),
                d.what(),
                d.shown()
            )
        } else {
            format!("{} in all", seconds(limit.allowed))
        }
    }

    /// What to do about a BMC that ran out of time.
    fn way_out(&self, limit: &Limit) -> String {
        format!(
            "a BMC this slow is overloaded, faulty or not a BMC: check it (its web interface; restarting the BMC often helps){}",
            limit.deadline.way_out()
        )
    }

    pub(super) fn tls_refusal(&self, reason: &str, presented: Option<&crate::pki::Pin>) -> String {
        let base = &self.base;
        let shown = presented
            .map(|p| p.to_string())
            .unwrap_or_else(|| "unknown".into());
        match &self.trust {
            ServerTrust::Pin(pin) => format!(
                "refusing the BMC at {base}: its certificate's public key is {shown}, not the pinned {pin} (--bmc-pin); nothing was sent to it. If the BMC's certificate was replaced on purpose, check the new one out of band (`dcn bmc fingerprint --bmc {base}`) and pin it; otherwise something is impersonating the BMC"
            ),
            _ => format!(
                "refusing the BMC at {base}: its certificate is not trusted ({reason}); nothing was sent to it. BMCs often have a self-signed certificate: check it out of band (`dcn bmc fingerprint --bmc {base}`; it presented {shown}) and pass --bmc-pin, or trust its CA with --bmc-ca FILE"
            ),
        }
    }
}

/// A reqwest error and its causes on one line, without repeats.
fn error_chain(e: &reqwest::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur: Option<&dyn std::error::Error> = Some(e);
    while let Some(err) = cur {
        let s = err.to_string();
        if !s.is_empty() && !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
        cur = err.source();
    }
    parts.join(": ")
}
