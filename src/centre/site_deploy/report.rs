//! What `dcn site deploy` prints at the end: a table of the nodes (stdout;
//! progress went to stderr as it happened) or the same as JSON.

use super::node::{NodeRun, Outcome};
use crate::terminal_text::{Column, Table};
use serde::Serialize;

/// The whole run.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeployReport {
    pub site: String,
    /// True when a bundle was exported for this run (else an earlier one
    /// was reused).
    pub bundle_exported: bool,
    pub media_url: Option<String>,
    pub nodes: Vec<NodeRun>,
    pub seconds: f64,
}

impl DeployReport {
    /// Every node placed (now or before).
    pub fn success(&self) -> bool {
        self.nodes
            .iter()
            .all(|n| !matches!(n.outcome, Outcome::Failed { .. }))
    }

    /// One row per node; the reasons come from BMCs and nodes, so each
    /// cell is bounded (`dcn site status` and the progress lines have the
    /// whole reason).
    pub fn table(&self) -> String {
        let mut t = Table::new(&[
            Column::new("NODE", 64),
            Column::new("RESULT", 160),
            Column::new("TIME", 12),
            Column::new("STRETCHES", 200),
        ]);
        for n in &self.nodes {
            let result = match &n.outcome {
                Outcome::AlreadyPlaced => "placed before".to_string(),
                Outcome::Placed => "placed".to_string(),
                Outcome::Failed { phase, reason } => {
                    format!("FAILED in {phase}: {}", first_line(reason))
                }
            };
            let stretches = n
                .stretches
                .iter()
                .map(|(s, t)| format!("{s} {t:.0}s"))
                .collect::<Vec<_>>()
                .join(", ");
            t.row([
                n.hostname.as_str(),
                &result,
                &format!("{:.0}s", n.seconds),
                if stretches.is_empty() {
                    "-"
                } else {
                    &stretches
                },
            ]);
        }
        let mut out = t.render();
        let placed = self
            .nodes
            .iter()
            .filter(|n| !matches!(n.outcome, Outcome::Failed { .. }))
            .count();
        out.push_str(&format!(
            "site {}: {placed} of {} node(s) placed in {:.0}s{}\n",
            self.site,
            self.nodes.len(),
            self.seconds,
            if self.success() {
                String::new()
            } else {
                "; run the same command again to retry the failed ones from where they failed"
                    .to_string()
            }
        ));
        out
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_each_node_its_result_and_the_way_out() {
        let report = DeployReport {
            site: "edge1".into(),
            bundle_exported: true,
            media_url: Some("https://10.0.0.1:8443".into()),
            nodes: vec![
                NodeRun {
                    hostname: "n1".into(),
                    outcome: Outcome::Placed,
                    stretches: vec![("bmc".into(), 12.3), ("install".into(), 301.0)],
                    seconds: 420.0,
                },
                NodeRun {
                    hostname: "n2".into(),
                    outcome: Outcome::Failed {
                        phase: "powered-on".into(),
                        reason: "logging in to the BMC: 401\nmore".into(),
                    },
                    stretches: vec![],
                    seconds: 1.0,
                },
            ],
            seconds: 421.0,
        };
        let t = report.table();
        assert!(t.contains("n1    placed"), "{t}");
        assert!(t.contains("bmc 12s, install 301s"), "{t}");
        assert!(
            t.contains("FAILED in powered-on: logging in to the BMC: 401  "),
            "{t}"
        );
        assert!(!t.contains("more"), "{t}");
        assert!(
            t.contains("1 of 2 node(s) placed") && t.contains("run the same command again"),
            "{t}"
        );
        assert!(!report.success());
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["nodes"][1]["result"], "failed");
        assert_eq!(json["nodes"][1]["phase"], "powered-on");
    }

    #[test]
    fn a_huge_reason_gives_a_bounded_row_not_a_panic() {
        // A BMC's 100 KB error message (the width once went into a format
        // width, which panics above 65,535), with escapes and multi-byte text.
        for reason in [
            "x".repeat(100 * 1024),
            format!("Système\u{1b}[2J{}", "✓".repeat(100 * 1024)),
        ] {
            let report = DeployReport {
                site: "edge1".into(),
                bundle_exported: false,
                media_url: None,
                nodes: vec![NodeRun {
                    hostname: "n1".into(),
                    outcome: Outcome::Failed {
                        phase: "powered-on".into(),
                        reason: reason.clone(),
                    },
                    stretches: vec![],
                    seconds: 1.0,
                }],
                seconds: 1.0,
            };
            let t = report.table();
            assert!(
                t.lines()
                    .all(|l| l.chars().count() <= 64 + 160 + 12 + 200 + 6),
                "{t}"
            );
            let row = t.lines().nth(1).unwrap();
            assert!(row.starts_with("n1    FAILED in powered-on: "), "{row}");
            assert!(row.contains("…  1s"), "{row}");
            assert!(!t.contains('\u{1b}'), "{t}");
            assert!(t.contains("0 of 1 node(s) placed"), "{t}");
            // The JSON report keeps the whole reason.
            let json = serde_json::to_value(&report).unwrap();
            assert_eq!(json["nodes"][0]["reason"], reason.as_str());
        }
    }
}
