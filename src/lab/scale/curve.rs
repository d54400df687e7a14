//! The scale report's curve: control-plane cores against edge hosts, the
//! whole control plane and its heaviest units, as an SVG image (a few
//! lines and labels; no plotting library needed for that).

use super::report::Step;
use std::fmt::Write;

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 420.0;
/// Left, right, top and bottom margins (room for the axes' labels and
/// the lines' names).
const MARGIN: (f64, f64, f64, f64) = (60.0, 190.0, 30.0, 50.0);
/// The units drawn beside the total.
const UNITS_DRAWN: usize = 6;
const COLOURS: [&str; 7] = [
    "#000000", "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];

/// The SVG of `steps`: one line for the total, one per heavy unit.
pub fn svg(steps: &[Step]) -> String {
    let mut lines: Vec<(String, Vec<(f64, f64)>)> = vec![(
        "control plane".into(),
        steps
            .iter()
            .map(|s| (s.hosts as f64, s.cpu_percent / 100.0))
            .collect(),
    )];
    for unit in heaviest(steps) {
        let points = (steps.iter())
            .map(|s| {
                let cpu = s.units.get(&unit).map_or(0.0, |u| u.cpu_percent);
                (s.hosts as f64, cpu / 100.0)
            })
            .collect();
        lines.push((unit.trim_end_matches(".service").to_string(), points));
    }
    let max_x = steps.iter().map(|s| s.hosts).max().unwrap_or(0).max(1) as f64;
    let max_y = (lines.iter().flat_map(|(_, p)| p.iter().map(|p| p.1)))
        .fold(0.0, f64::max)
        .max(0.01);
    let (left, right, top, bottom) = MARGIN;
    let (w, h) = (WIDTH - left - right, HEIGHT - top - bottom);
    let x = |v: f64| left + v / max_x * w;
    let y = |v: f64| top + h - v / (max_y * 1.1) * h;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    axes(&mut out, &x, &y, max_x, max_y * 1.1);
    for (k, (name, points)) in lines.iter().enumerate() {
        let colour = COLOURS[k % COLOURS.len()];
        let path: Vec<String> = (points.iter())
            .map(|(px, py)| format!("{:.1},{:.1}", x(*px), y(*py)))
            .collect();
        let width = if k == 0 { 2.5 } else { 1.5 };
        let _ = writeln!(
            out,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"{width}\" points=\"{}\"/>",
            path.join(" ")
        );
        for (px, py) in points {
            let _ = writeln!(
                out,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"{colour}\"/>",
                x(*px),
                y(*py)
            );
        }
        let _ = writeln!(
            out,
            "<text x=\"{:.0}\" y=\"{:.0}\" fill=\"{colour}\">{}</text>",
            left + w + 12.0,
            top + 16.0 * (k as f64 + 1.0),
            escape(name)
        );
    }
    out.push_str("</svg>\n");
    out
}

/// The units with the most CPU at the largest step.
fn heaviest(steps: &[Step]) -> Vec<String> {
    let Some(last) = steps.last() else {
        return Vec::new();
    };
    let mut units: Vec<(&String, f64)> = (last.units.iter())
        .map(|(n, u)| (n, u.cpu_percent))
        .collect();
    units.sort_by(|a, b| b.1.total_cmp(&a.1));
    units
        .into_iter()
        .take(UNITS_DRAWN)
        .map(|(n, _)| n.clone())
        .collect()
}

/// The axes with five ticks each and their titles.
fn axes(out: &mut String, x: &dyn Fn(f64) -> f64, y: &dyn Fn(f64) -> f64, max_x: f64, max_y: f64) {
    let (x0, y0) = (x(0.0), y(0.0));
    let _ = writeln!(
        out,
        "<line x1=\"{x0:.1}\" y1=\"{y0:.1}\" x2=\"{:.1}\" y2=\"{y0:.1}\" stroke=\"black\"/>\n\
         <line x1=\"{x0:.1}\" y1=\"{y0:.1}\" x2=\"{x0:.1}\" y2=\"{:.1}\" stroke=\"black\"/>",
        x(max_x),
        y(max_y)
    );
    for k in 0..=5 {
        let (vx, vy) = (max_x * k as f64 / 5.0, max_y * k as f64 / 5.0);
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{vx:.0}</text>\n\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{vy:.2}</text>",
            x(vx),
            y0 + 18.0,
            x0 - 6.0,
            y(vy) + 4.0
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">edge hosts</text>\n\
         <text x=\"14\" y=\"{:.1}\" transform=\"rotate(-90 14 {:.1})\" text-anchor=\"middle\">control-plane cores</text>",
        (x0 + x(max_x)) / 2.0,
        y0 + 40.0,
        (y0 + y(max_y)) / 2.0,
        (y0 + y(max_y)) / 2.0
    );
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::scale::sample::UnitUse;
    use std::collections::BTreeMap;
    use std::time::Duration;

    #[test]
    fn draws_the_total_and_each_heavy_unit() {
        let step = |hosts: usize, cpu: f64| {
            let mut units = BTreeMap::new();
            for k in 0..8 {
                let u = UnitUse {
                    cpu_percent: cpu * k as f64,
                    ..UnitUse::default()
                };
                units.insert(format!("u{k}<x>.service"), u);
            }
            Step::new(hosts, Duration::from_secs(1), units, Vec::new(), 0.0)
        };
        let svg = svg(&[step(0, 1.0), step(100, 2.0)]);
        assert!(svg.starts_with("<svg"));
        assert_eq!(svg.matches("<polyline").count(), 1 + UNITS_DRAWN);
        assert!(svg.contains("u7&lt;x&gt;"), "names are escaped");
        assert!(
            !svg.contains("u0&lt;x&gt;"),
            "the lightest units are left out"
        );
        assert!(svg.trim_end().ends_with("</svg>"));
    }
}
