//! clap definitions of `dcn cert list|renew` and `dcn ca status|rotate`.

use super::OutputFormat;
use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum CertCommand {
    /// List the certificates dcn issued: subject, issuer, serial, end and time left
    ///
    /// On the control plane: its CAs, its TLS certificates (API endpoints, join service,
    /// AMQPS, OVN southbound) and every node's certificate as it was last issued. On an
    /// edge: its own. STATE is `ok`, `renewal due` (in its renewal window: the next check
    /// renews it) or `expired`.
    List {
        #[arg(long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Renew what is due now (the dcn-cert-renew timer on the control plane, and each
    /// node's dcn-config-sync timer, run this check by themselves)
    ///
    /// On the control plane: issue again each of its certificates that is due, missing
    /// or not matching its key, write the CA files its services read, and tell each
    /// service whose files changed (a reload that keeps connections, or nothing for one
    /// that reads its files again). On an edge: check with the join service now, and
    /// renew the node's certificate (for the same key) when due.
    Renew {
        /// Renew every certificate of this host, due or not
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum CaCommand {
    /// The CA in service (its pin, which `dcn join --ca-pin` checks), a rotation under
    /// way, and which nodes trust the new CA
    Status {
        #[arg(long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Move to a new CA: trusted beside the old one first, then in service with --finish
    ///
    /// Without --finish: make a new CA and trust it beside the old one, here at once and
    /// on each node at its next certificate check; new join bundles pin it. With
    /// --finish: once every node trusts it, issue the control plane's certificates with
    /// it and retire the old CA (its key is deleted). A node cut off during the
    /// rotation gets back with `dcn node trust-ca --ca-pin PIN` on it.
    Rotate {
        /// Put the new CA in service and retire the old one
        #[arg(long)]
        finish: bool,
        /// With --finish: go on although some nodes do not trust the new CA yet
        #[arg(long, requires = "finish")]
        force: bool,
    },
}
