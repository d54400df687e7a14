//! The scale harness's report: each step's window (the control plane's
//! CPU, memory and connections by unit, the step's join times), the cost
//! per edge host fitted over the steps, what grows faster than linear, and
//! the curve. Written after every step (report.json, report.md from
//! [`super::markdown`], curve.svg), so a run stopped half-way still leaves
//! its figures.

use super::ScaleOptions;
use super::chassis::ChassisJoin;
use super::curve;
use super::sample::UnitUse;
use crate::host::{FileSpec, Files};
use anyhow::Result;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// The goals of issue 25, per edge host.
pub const GOAL_CPU_PERCENT_PER_HOST: f64 = 0.1;
pub const GOAL_PSS_BYTES_PER_HOST: f64 = 2e6;
/// After a storm, every chassis up within this.
pub const GOAL_STORM_SECONDS: f64 = 300.0;

/// A unit's marginal cost over the last step above this many times its
/// fitted cost per host is named as growing faster than linear…
pub(super) const FASTER_THAN_LINEAR: f64 = 1.5;
/// …when its CPU grew by more than this over the last step (percent of a
/// core): below it, a window's noise makes an idle unit look like a trend.
const NOISE_PERCENT: f64 = 1.0;

/// The whole run.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleReport {
    pub machine: Machine,
    pub per_site: usize,
    pub per_carrier: usize,
    pub window_seconds: f64,
    pub settle_seconds: f64,
    pub steps: Vec<Step>,
    pub fit: Option<Fit>,
    /// The reconnect storms at the last step's size, when asked for.
    pub storms: Option<super::storm::Storms>,
    /// With `--calibrate`: the replayer against the real nova-computes,
    /// step by step.
    pub calibration: Vec<super::calibration::Check>,
}

/// What the run ran on.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Machine {
    pub cores: usize,
    pub memory_bytes: u64,
    pub kernel: String,
    pub dcn_version: String,
}

/// One fleet size and its measurement window.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    pub hosts: usize,
    /// How many of them run a nova-compute (nova's fake virt driver)…
    pub computes: usize,
    /// …and how many a replayed one.
    pub replayed: usize,
    pub window_seconds: f64,
    /// The whole control plane, in percent of one core.
    pub cpu_percent: f64,
    pub pss_bytes: u64,
    pub tcp_connections: u64,
    pub units: BTreeMap<String, UnitUse>,
    /// The joins of this step's new hosts, all at once.
    pub joins: JoinFigures,
    /// From the last join to every chassis answering the southbound (and
    /// every nova-compute reporting to nova).
    pub chassis_up_seconds: f64,
    /// The operator's views of the fleet, timed after the window.
    pub views: Views,
    /// With `--calibrate`: the same hosts with their computes' load
    /// replayed, and without compute load.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibration: Option<super::calibration::Calibration>,
}

/// How long the operator's views of the fleet take on the control plane
/// (the goal: 2 s at 1,000 hosts).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Views {
    /// `dcn node list`: every host with both its planes' health.
    pub node_list_seconds: f64,
    /// `dcn site status SITE` of one site (the first).
    pub site_status_seconds: f64,
}

/// The join times of one step (the request's round trip).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JoinFigures {
    pub count: usize,
    pub median_seconds: f64,
    pub p95_seconds: f64,
    pub max_seconds: f64,
}

/// The cost per edge host, fitted over every step.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Fit {
    pub cpu_percent_per_host: f64,
    pub pss_bytes_per_host: f64,
    pub units: BTreeMap<String, UnitFit>,
    /// Units whose cost grew faster than linear over the last step.
    pub faster_than_linear: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnitFit {
    pub cpu_percent_per_host: f64,
    pub pss_bytes_per_host: f64,
    /// Over the last step only.
    pub last_step_cpu_percent_per_host: f64,
}

impl JoinFigures {
    fn of(joins: &[ChassisJoin]) -> JoinFigures {
        let mut t: Vec<f64> = (joins.iter())
            .filter(|j| !j.kept)
            .map(|j| j.join_seconds)
            .collect();
        if t.is_empty() {
            return JoinFigures::default();
        }
        t.sort_by(f64::total_cmp);
        let at = |q: f64| t[((t.len() - 1) as f64 * q).round() as usize];
        JoinFigures {
            count: t.len(),
            median_seconds: at(0.5),
            p95_seconds: at(0.95),
            max_seconds: t[t.len() - 1],
        }
    }
}

impl Step {
    pub fn new(
        hosts: usize,
        window: Duration,
        units: BTreeMap<String, UnitUse>,
        joins: Vec<ChassisJoin>,
        chassis_up_seconds: f64,
    ) -> Step {
        Step {
            hosts,
            computes: 0,
            replayed: 0,
            window_seconds: window.as_secs_f64(),
            cpu_percent: units.values().map(|u| u.cpu_percent).sum(),
            pss_bytes: units.values().map(|u| u.pss_bytes).sum(),
            tcp_connections: units.values().map(|u| u.tcp_connections).sum(),
            units,
            joins: JoinFigures::of(&joins),
            chassis_up_seconds,
            views: Views::default(),
            calibration: None,
        }
    }
}

/// Least-squares slope of y against x.
pub fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    if points.len() < 2 {
        return 0.0;
    }
    let (mx, my) = (
        points.iter().map(|p| p.0).sum::<f64>() / n,
        points.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx == 0.0 {
        return 0.0;
    }
    points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>() / sxx
}

impl ScaleReport {
    pub fn new(opts: &ScaleOptions) -> ScaleReport {
        let memory_bytes = sysinfo::System::new()
            .map(|mut s| {
                s.refresh_memory();
                s.total_memory()
            })
            .unwrap_or(0);
        let kernel = nix::sys::utsname::uname()
            .map(|u| u.release().to_string_lossy().into_owned())
            .unwrap_or_default();
        ScaleReport {
            machine: Machine {
                cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
                memory_bytes,
                kernel,
                dcn_version: env!("CARGO_PKG_VERSION").into(),
            },
            per_site: opts.per_site,
            per_carrier: opts.per_carrier,
            window_seconds: opts.window.as_secs_f64(),
            settle_seconds: opts.settle.as_secs_f64(),
            steps: Vec::new(),
            fit: None,
            storms: None,
            calibration: Vec::new(),
        }
    }

    /// Add a measured step (its calibration compared).
    pub fn push(&mut self, step: Step) {
        self.steps.push(step);
        self.calibration = super::calibration::checks(&self.steps);
    }

    /// Fit the cost per host over the steps, by unit and in total.
    pub fn fit(&mut self) {
        let points = |f: &dyn Fn(&Step) -> f64| -> Vec<(f64, f64)> {
            self.steps.iter().map(|s| (s.hosts as f64, f(s))).collect()
        };
        let all_units: std::collections::BTreeSet<String> = (self.steps.iter())
            .flat_map(|s| s.units.keys().cloned())
            .collect();
        let unit = |s: &Step, u: &str| s.units.get(u).cloned().unwrap_or_default();
        let mut units = BTreeMap::new();
        let mut faster = Vec::new();
        for u in &all_units {
            let cpu = slope(&points(&|s| unit(s, u).cpu_percent));
            let (grew, last) = match self.steps.as_slice() {
                [.., a, b] if b.hosts > a.hosts => {
                    let grew = unit(b, u).cpu_percent - unit(a, u).cpu_percent;
                    (grew, grew / (b.hosts - a.hosts) as f64)
                }
                _ => (0.0, 0.0),
            };
            if cpu > 0.0 && grew > NOISE_PERCENT && last > FASTER_THAN_LINEAR * cpu {
                faster.push(u.clone());
            }
            units.insert(
                u.clone(),
                UnitFit {
                    cpu_percent_per_host: cpu,
                    pss_bytes_per_host: slope(&points(&|s| unit(s, u).pss_bytes as f64)),
                    last_step_cpu_percent_per_host: last,
                },
            );
        }
        self.fit = Some(Fit {
            cpu_percent_per_host: slope(&points(&|s| s.cpu_percent)),
            pss_bytes_per_host: slope(&points(&|s| s.pss_bytes as f64)),
            units,
            faster_than_linear: faster,
        });
    }

    /// report.json, report.md and curve.svg in `dir`.
    pub fn write(&self, files: &Files, dir: &Path) -> Result<()> {
        files.ensure_dir(dir, &FileSpec::public_dir())?;
        let json = serde_json::to_string_pretty(self)?;
        files.write(
            dir.join("report.json"),
            json.as_bytes(),
            &FileSpec::public(),
        )?;
        files.write(
            dir.join("report.md"),
            self.markdown().as_bytes(),
            &FileSpec::public(),
        )?;
        let svg = curve::svg(&self.steps);
        files.write(dir.join("curve.svg"), svg.as_bytes(), &FileSpec::public())?;
        Ok(())
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(crate) fn step(hosts: usize, units: &[(&str, f64)]) -> Step {
        let units = (units.iter())
            .map(|(n, cpu)| {
                let u = UnitUse {
                    cpu_percent: *cpu,
                    pss_bytes: 1_000_000 + hosts as u64 * 1000,
                    ..UnitUse::default()
                };
                (n.to_string(), u)
            })
            .collect();
        Step::new(hosts, Duration::from_secs(600), units, Vec::new(), 0.0)
    }

    pub(crate) fn report(steps: Vec<Step>) -> ScaleReport {
        ScaleReport {
            machine: Machine {
                cores: 2,
                memory_bytes: 24 << 30,
                kernel: "6".into(),
                dcn_version: "0".into(),
            },
            per_site: 10,
            per_carrier: 25,
            window_seconds: 600.0,
            settle_seconds: 60.0,
            steps,
            fit: None,
            storms: None,
            calibration: Vec::new(),
        }
    }

    #[test]
    fn linear_costs_fit_exactly_and_a_bend_is_named() {
        let mut r = report(vec![
            step(
                0,
                &[("a.service", 1.0), ("b.service", 2.0), ("c.service", 0.1)],
            ),
            step(
                100,
                &[("a.service", 6.0), ("b.service", 2.5), ("c.service", 0.1)],
            ),
            step(
                200,
                &[("a.service", 11.0), ("b.service", 6.0), ("c.service", 0.9)],
            ),
        ]);
        r.fit();
        let f = r.fit.as_ref().unwrap();
        assert!((f.units["a.service"].cpu_percent_per_host - 0.05).abs() < 1e-9);
        assert!((f.pss_bytes_per_host - 3000.0).abs() < 1e-6);
        // c grew faster too, but by less than a window's noise.
        assert_eq!(f.faster_than_linear, vec!["b.service".to_string()]);
        let md = r.markdown();
        assert!(md.contains("| 200 | 0 | 17.90 |"), "{md}");
        assert!(md.contains("Growing faster than linear"), "{md}");
    }

    #[test]
    fn join_figures_leave_out_kept_joins() {
        let j = |s: f64, kept: bool| ChassisJoin {
            name: "x".into(),
            join_seconds: s,
            kept,
        };
        let f = JoinFigures::of(&[j(1.0, false), j(3.0, false), j(2.0, false), j(0.0, true)]);
        assert_eq!((f.count, f.median_seconds, f.max_seconds), (3, 2.0, 3.0));
    }

    #[test]
    fn slope_of_too_few_points_is_zero() {
        assert_eq!(slope(&[(1.0, 1.0)]), 0.0);
        assert_eq!(slope(&[(1.0, 1.0), (1.0, 2.0)]), 0.0);
        assert!((slope(&[(0.0, 1.0), (2.0, 5.0)]) - 2.0).abs() < 1e-12);
    }
}
