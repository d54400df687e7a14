//! What a Tempest run came to: each test's status from the run's subunit
//! stream (as `subunit2csv` writes it: test id, status, start, stop),
//! counted, with the failures named.

use serde::Serialize;

/// The outcome of one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// What was selected (`--smoke`, regexes) and where servers went.
    pub selection: String,
    pub passed: usize,
    pub skipped: usize,
    pub failed: usize,
    /// The failed tests' ids.
    pub failures: Vec<String>,
    /// The exclusion list's entries: (pattern, reason).
    pub excluded: Vec<(String, String)>,
    pub seconds: f64,
}

impl Summary {
    /// Count the rows of `subunit2csv`'s output.
    pub fn from_csv(selection: &str, csv: &str) -> Summary {
        let mut s = Summary {
            selection: selection.to_string(),
            ..Summary::default()
        };
        for line in csv.lines().skip_while(|l| l.starts_with("test,")) {
            // The id holds no comma outside its `[...]` attributes, which
            // come last: split at the status column from the right.
            let mut cols = line.rsplitn(4, ',');
            let (Some(_stop), Some(_start), Some(status), Some(id)) =
                (cols.next(), cols.next(), cols.next(), cols.next())
            else {
                continue;
            };
            match status {
                "success" | "xfail" => s.passed += 1,
                "skip" => s.skipped += 1,
                // subunit's words: `failure` (an assertion), `error`
                // (an exception), `uxsuccess` (an expected failure passed).
                "failure" | "error" | "uxsuccess" => {
                    s.failed += 1;
                    s.failures.push(id.trim_matches('"').to_string());
                }
                _ => {}
            }
        }
        s.failures.sort();
        s
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "Tempest ({}): {} passed, {} skipped, {} failed in {:.0}s; {} excluded by name",
            self.selection,
            self.passed,
            self.skipped,
            self.failed,
            self.seconds,
            self.excluded.len()
        )?;
        for t in &self.failures {
            writeln!(f, "  FAILED {t}")?;
        }
        Ok(())
    }
}

/// The exclusion list's entries: each line a regular expression over test
/// ids and `# the reason`; blank and comment-only lines skipped.
pub fn exclusions(list: &str) -> Vec<(String, String)> {
    list.lines()
        .filter_map(|l| {
            let (pattern, reason) = l.split_once('#').unwrap_or((l, ""));
            let pattern = pattern.trim();
            (!pattern.is_empty()).then(|| (pattern.to_string(), reason.trim().to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_counted_and_failures_named() {
        let csv = "test,status,start_time,stop_time\n\
tempest.api.identity.v3.test_domains.DomainsTestJSON.test_list_domains[id-1,smoke],success,2026-11-25 01:00:00+00:00,2026-11-25 01:00:01+00:00\n\
tempest.api.volume.test_x.T.test_y[id-2],skip,2026-11-25 01:00:01+00:00,2026-11-25 01:00:01+00:00\n\
tempest.api.image.v2.test_metadefs.T.test_z[id-3],failure,2026-11-25 01:00:02+00:00,2026-11-25 01:00:03+00:00\n\
\"tempest.api.identity.T.test_v[id-5,negative]\",failure,2026-11-25 01:00:02+00:00,2026-11-25 01:00:03+00:00\n\
setUpClass (tempest.api.network.T),error,a,b\n\
tempest.api.compute.T.test_w[id-4],xfail,a,b\n";
        let s = Summary::from_csv("smoke", csv);
        assert_eq!((s.passed, s.skipped, s.failed), (2, 1, 3));
        assert_eq!(
            s.failures,
            vec![
                "setUpClass (tempest.api.network.T)",
                "tempest.api.identity.T.test_v[id-5,negative]",
                "tempest.api.image.v2.test_metadefs.T.test_z[id-3]",
            ]
        );
        assert!(s.to_string().contains("2 passed, 1 skipped, 3 failed"));
    }

    #[test]
    fn the_exclusion_list_reads_patterns_and_reasons() {
        let list = "# comment only\n\ntempest\\.api\\.x\\.test_y  # needs cinder\nplain\n";
        assert_eq!(
            exclusions(list),
            vec![
                (
                    "tempest\\.api\\.x\\.test_y".to_string(),
                    "needs cinder".to_string()
                ),
                ("plain".to_string(), String::new())
            ]
        );
    }
}
