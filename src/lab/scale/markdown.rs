//! The scale report for people (report.md): the steps, the fit against
//! the goals, the heaviest units and the storms.

use super::report::{
    FASTER_THAN_LINEAR, Fit, GOAL_CPU_PERCENT_PER_HOST, GOAL_PSS_BYTES_PER_HOST,
    GOAL_STORM_SECONDS, ScaleReport, UnitFit,
};
use super::storm::Storms;

impl ScaleReport {
    /// The report for people: the steps, the fit against the goals, and
    /// the heaviest units.
    pub fn markdown(&self) -> String {
        let m = &self.machine;
        let mut out = format!(
            "# dcn scale run\n\nMachine: {} cores, {:.0} GiB, kernel {}; dcn {}. \
             {} hosts per site, {} per carrier; windows of {:.0} s after {:.0} s of settling.\n\n\
             ![control-plane cores against edge hosts](curve.svg)\n\n",
            m.cores,
            m.memory_bytes as f64 / (1u64 << 30) as f64,
            m.kernel,
            m.dcn_version,
            self.per_site,
            self.per_carrier,
            self.window_seconds,
            self.settle_seconds
        );
        out.push_str("| hosts | of them with a nova-compute (replayed) | control plane CPU (% of a core) | PSS (GB) | TCP connections | joins | join median / p95 / max (s) | all up (s) | node list / site status (s) |\n|---|---|---|---|---|---|---|---|---|\n");
        for s in &self.steps {
            out.push_str(&format!(
                "| {} | {} | {:.2} | {:.2} | {} | {} | {:.1} / {:.1} / {:.1} | {:.1} | {:.2} / {:.2} |\n",
                s.hosts,
                match s.replayed {
                    0 => s.computes.to_string(),
                    r => format!("{} ({r})", s.computes + r),
                },
                s.cpu_percent,
                s.pss_bytes as f64 / 1e9,
                s.tcp_connections,
                s.joins.count,
                s.joins.median_seconds,
                s.joins.p95_seconds,
                s.joins.max_seconds,
                s.chassis_up_seconds,
                s.views.node_list_seconds,
                s.views.site_status_seconds
            ));
        }
        if let Some(f) = &self.fit {
            out.push_str(&self.fit_markdown(f));
        }
        out.push_str(&super::calibration::markdown(&self.calibration));
        if let Some(st) = &self.storms {
            out.push_str(&storms_markdown(st));
        }
        out
    }

    fn fit_markdown(&self, f: &Fit) -> String {
        let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
        let mut out = format!(
            "\n## Cost per edge host (least squares over the steps)\n\n\
             | figure | measured | goal | |\n|---|---|---|---|\n\
             | control-plane CPU per host | {:.4} % of a core | ≤ {GOAL_CPU_PERCENT_PER_HOST} % | {} |\n\
             | control-plane PSS per host | {:.2} MB | ≤ {:.0} MB | {} |\n",
            f.cpu_percent_per_host,
            verdict(f.cpu_percent_per_host <= GOAL_CPU_PERCENT_PER_HOST),
            f.pss_bytes_per_host / 1e6,
            GOAL_PSS_BYTES_PER_HOST / 1e6,
            verdict(f.pss_bytes_per_host <= GOAL_PSS_BYTES_PER_HOST),
        );
        let mut heavy: Vec<(&String, &UnitFit)> = f.units.iter().collect();
        heavy.sort_by(|a, b| {
            b.1.cpu_percent_per_host
                .total_cmp(&a.1.cpu_percent_per_host)
        });
        out.push_str("\n## By unit (the ten with the largest CPU cost per host)\n\n| unit | CPU per host (% of a core) | over the last step | PSS per host (MB) |\n|---|---|---|---|\n");
        for (name, u) in heavy.iter().take(10) {
            out.push_str(&format!(
                "| {name} | {:.4} | {:.4} | {:.2} |\n",
                u.cpu_percent_per_host,
                u.last_step_cpu_percent_per_host,
                u.pss_bytes_per_host / 1e6
            ));
        }
        if f.faster_than_linear.is_empty() {
            out.push_str("\nNo unit grew faster than linear over the last step.\n");
        } else {
            out.push_str(&format!(
                "\nGrowing faster than linear over the last step (more than {FASTER_THAN_LINEAR}× its fitted cost per host): {}.\n",
                f.faster_than_linear.join(", ")
            ));
        }
        out
    }
}

/// The storms' table, against the goal of every chassis and compute up
/// within 5 minutes.
fn storms_markdown(st: &Storms) -> String {
    let mut out = format!(
        "\n## Reconnect storms at {} hosts\n\n| storm | outage (s) | chassis down before recovery | every chassis up after (s) | every nova-compute reporting after (s) | control plane CPU meanwhile (% of a core) | PSS after (GB) | goal: up within {:.0} s |\n|---|---|---|---|---|---|---|---|\n",
        st.hosts, GOAL_STORM_SECONDS
    );
    for (name, s) in [
        ("every link cut, then restored at once", &st.links),
        ("control plane restarted", &st.restart),
    ] {
        let computes = s
            .computes_up_seconds
            .map_or("-".into(), |c| format!("{c:.1}"));
        let slowest = s.all_up_seconds.max(s.computes_up_seconds.unwrap_or(0.0));
        out.push_str(&format!(
            "| {name} | {:.0} | {} | {:.1} | {computes} | {:.1} | {:.2} | {} |\n",
            s.outage_seconds,
            s.down_before_recovery,
            s.all_up_seconds,
            s.cpu_percent,
            s.pss_bytes as f64 / 1e9,
            if slowest <= GOAL_STORM_SECONDS {
                "met"
            } else {
                "NOT met"
            }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::report::tests::{report, step};

    #[test]
    fn storms_are_shown_against_their_goal() {
        let storm = |up: f64| crate::lab::scale::storm::Storm {
            outage_seconds: 60.0,
            down_before_recovery: 50,
            all_up_seconds: up,
            computes_up_seconds: (up > 100.0).then_some(30.0),
            cpu_percent: 80.0,
            pss_bytes: 2_000_000_000,
        };
        let mut r = report(vec![step(0, &[("a.service", 1.0)])]);
        r.storms = Some(crate::lab::scale::storm::Storms {
            hosts: 50,
            links: storm(12.5),
            restart: storm(400.0),
        });
        let md = r.markdown();
        assert!(md.contains("## Reconnect storms at 50 hosts"), "{md}");
        assert!(
            md.contains(
                "| every link cut, then restored at once | 60 | 50 | 12.5 | - | 80.0 | 2.00 | met |"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| control plane restarted | 60 | 50 | 400.0 | 30.0 | 80.0 | 2.00 | NOT met |"
            ),
            "{md}"
        );
    }
}
