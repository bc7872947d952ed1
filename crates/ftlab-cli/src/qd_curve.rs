//! `ftlab qd-curve`: closed-loop throughput and tail latency against queue depth.
//!
//! One run of the configured workload per queue depth (`--queue-depth` set by the sweep,
//! trace timestamps ignored; docs/timing.md), the figures of each report collected into
//! a CSV and drawn with `ftlab-plot`: IOPS against depth and p99 response time against
//! depth (all requests, reads, writes), as SVG and PNG. Choices: the depths default to
//! the powers of two 1..256 (the range SSD studies sweep); runs go one after another,
//! each from a fresh device, so every point is the same experiment but for its depth.

use anyhow::Context;
use ftlab::{Config, NoObserver, Simulation, Workload};
use ftlab_plot::{self as plot, Chart, Kind, Series};
use std::fmt::Write as _;
use std::path::Path;

/// The default depths: 1, 2, 4, ... 256.
pub const DEFAULT_DEPTHS: &str = "1,2,4,8,16,32,64,128,256";

/// One point of the curve.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// Queue depth.
    pub depth: u32,
    /// Requests per simulated second.
    pub iops: f64,
    /// MB/s.
    pub mb_s: f64,
    /// p99 response time of every request, ns.
    pub p99_ns: u64,
    /// p99 of the reads, ns (0 with none).
    pub read_p99_ns: u64,
    /// p99 of the writes, ns (0 with none).
    pub write_p99_ns: u64,
    /// Device utilisation, if any time was simulated.
    pub utilisation: Option<f64>,
}

/// Runs `cfg` at each depth; `progress` is told each point as it is done.
pub fn sweep(
    cfg: &Config,
    depths: &[u32],
    mut progress: impl FnMut(&Point),
) -> anyhow::Result<Vec<Point>> {
    let mut points = Vec::with_capacity(depths.len());
    for &depth in depths {
        let c = Config {
            queue_depth: Some(depth),
            ..cfg.clone()
        };
        let out = Simulation::new(c)?.run(Workload::Configured, &mut NoObserver)?;
        if let Some(f) = &out.failure {
            anyhow::bail!("the run at queue depth {depth} failed: {f}");
        }
        let h = &out.report.host;
        let p = Point {
            depth,
            iops: h.iops,
            mb_s: h.mb_s,
            p99_ns: h.response_ns.p99,
            read_p99_ns: h.read_response_ns.p99,
            write_p99_ns: h.write_response_ns.p99,
            utilisation: h.utilisation,
        };
        progress(&p);
        points.push(p);
    }
    Ok(points)
}

/// The points as CSV, one row per depth.
pub fn csv(points: &[Point]) -> String {
    let mut s = String::from("queue_depth,iops,mb_s,p99_ns,read_p99_ns,write_p99_ns,utilisation\n");
    for p in points {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{}",
            p.depth,
            p.iops,
            p.mb_s,
            p.p99_ns,
            p.read_p99_ns,
            p.write_p99_ns,
            p.utilisation.map_or(String::new(), |u| u.to_string())
        );
    }
    s
}

/// The two charts: IOPS against depth, p99 (µs) against depth.
pub fn charts(points: &[Point], title: &str) -> [Chart; 2] {
    let categories: Vec<String> = points.iter().map(|p| p.depth.to_string()).collect();
    let iops = Chart {
        title: format!("IOPS vs queue depth ({title})"),
        x_label: "queue depth".into(),
        y_label: "IOPS".into(),
        categories: categories.clone(),
        series: vec![Series {
            name: "IOPS".into(),
            values: points.iter().map(|p| Some(p.iops)).collect(),
            paper: Vec::new(),
        }],
        kind: Kind::Line,
        caption: String::new(),
    };
    let us = |v: u64| (v > 0).then_some(v as f64 / 1e3);
    let p99 = Chart {
        title: format!("p99 response time vs queue depth ({title})"),
        x_label: "queue depth".into(),
        y_label: "p99 response time (µs)".into(),
        categories,
        series: vec![
            Series {
                name: "all".into(),
                values: points.iter().map(|p| us(p.p99_ns)).collect(),
                paper: Vec::new(),
            },
            Series {
                name: "reads".into(),
                values: points.iter().map(|p| us(p.read_p99_ns)).collect(),
                paper: Vec::new(),
            },
            Series {
                name: "writes".into(),
                values: points.iter().map(|p| us(p.write_p99_ns)).collect(),
                paper: Vec::new(),
            },
        ]
        .into_iter()
        // A workload with no reads (or writes) has no such line.
        .filter(|s| s.values.iter().any(Option::is_some))
        .collect(),
        kind: Kind::Line,
        caption: String::new(),
    };
    [iops, p99]
}

/// Writes `<prefix>.csv`, `<prefix>-iops.{svg,png}` and `<prefix>-p99.{svg,png}`;
/// returns the files written.
pub fn write(points: &[Point], title: &str, prefix: &Path) -> anyhow::Result<Vec<String>> {
    let name = |suffix: &str| {
        let mut p = prefix.as_os_str().to_owned();
        p.push(suffix);
        std::path::PathBuf::from(p)
    };
    let mut written = Vec::new();
    let mut put = |path: std::path::PathBuf, bytes: &[u8]| -> anyhow::Result<()> {
        std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
        written.push(path.display().to_string());
        Ok(())
    };
    put(name(".csv"), csv(points).as_bytes())?;
    let [iops, p99] = charts(points, title);
    for (chart, suffix) in [(iops, "-iops"), (p99, "-p99")] {
        let svg = plot::svg(&chart);
        let png = plot::png(&svg).map_err(|why| anyhow::anyhow!("drawing {suffix}: {why}"))?;
        put(name(&format!("{suffix}.svg")), svg.as_bytes())?;
        put(name(&format!("{suffix}.png")), &png)?;
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(depth: u32, write_p99_ns: u64) -> Point {
        Point {
            depth,
            iops: 1000.0 * depth as f64,
            mb_s: 4.0 * depth as f64,
            p99_ns: 100_000 * depth as u64,
            read_p99_ns: 100_000 * depth as u64,
            write_p99_ns,
            utilisation: None,
        }
    }

    #[test]
    fn csv_has_a_row_per_depth_and_charts_drop_kinds_without_requests() {
        let pts = [point(1, 0), point(8, 0)];
        let text = csv(&pts);
        let rows: Vec<&str> = text.lines().collect();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[2], "8,8000,32,800000,800000,0,");
        let [iops, p99] = charts(&pts, "t");
        assert_eq!(iops.categories, ["1", "8"]);
        let names: Vec<&str> = p99.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["all", "reads"]);
        assert_eq!(p99.series[0].values, [Some(100.0), Some(800.0)]);
        let [_, p99] = charts(&[point(1, 5_000)], "t");
        assert_eq!(p99.series.len(), 3);
    }
}
