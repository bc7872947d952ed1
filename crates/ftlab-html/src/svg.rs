//! Inline SVG charts, rendered on the server: readable offline, printable, and
//! countable by a test. Every chart is a `<figure class="chart">` whose
//! `data-series` is its number of series; every series is an element of class
//! `series` whose `data-points` is the number of points it draws (path vertices of a
//! line, bars of a histogram).

use crate::esc;
use std::fmt::Write as _;

const W: f64 = 560.0;
const H: f64 = 270.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 14.0;
const BOTTOM: f64 = 42.0;
/// Series colours, in order (colour-blind friendly).
pub const COLORS: [&str; 8] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#555555", "#f0e442",
];

/// One line: `(x, y)` points in order; `None` breaks the line.
pub struct Line {
    /// Legend label.
    pub name: String,
    /// The points.
    pub points: Vec<(f64, Option<f64>)>,
}

/// One histogram: bars `(from, to, value)` over a numeric x.
pub struct Bars {
    /// Legend label.
    pub name: String,
    /// The bars.
    pub bars: Vec<(f64, f64, f64)>,
}

/// What every chart has.
pub struct Frame<'a> {
    /// `data-chart` id (stable, for tests and links).
    pub id: &'a str,
    /// Caption.
    pub title: &'a str,
    /// X-axis label.
    pub x_label: &'a str,
    /// Y-axis label.
    pub y_label: &'a str,
}

/// A linear or decimal-log axis from a domain to pixels.
#[derive(Clone, Copy)]
struct Axis {
    lo: f64,
    hi: f64,
    p0: f64,
    p1: f64,
    log: bool,
}

impl Axis {
    fn new(lo: f64, hi: f64, p0: f64, p1: f64, log: bool) -> Axis {
        let (lo, hi) = if log {
            let lo = lo.max(1e-9).log10().floor();
            let hi = hi.max(1e-9).log10().ceil();
            (lo, if hi <= lo { lo + 1.0 } else { hi })
        } else if hi <= lo {
            (lo, lo + 1.0)
        } else {
            (lo, hi)
        };
        Axis {
            lo,
            hi,
            p0,
            p1,
            log,
        }
    }

    fn px(&self, v: f64) -> f64 {
        let v = if self.log { v.max(1e-9).log10() } else { v };
        self.p0 + (v - self.lo) / (self.hi - self.lo) * (self.p1 - self.p0)
    }

    /// Tick values (in data units) with their labels.
    fn ticks(&self) -> Vec<(f64, String)> {
        if self.log {
            return (self.lo as i32..=self.hi as i32)
                .map(|e| (10f64.powi(e), fmt_num(10f64.powi(e))))
                .collect();
        }
        let step = nice_step(self.hi - self.lo);
        let first = (self.lo / step).ceil() as i64;
        let last = (self.hi / step + 1e-9).floor() as i64;
        (first..=last)
            .map(|i| i as f64 * step)
            .map(|v| (v, fmt_num(v)))
            .collect()
    }

    /// `data-*` attributes that let the page's script map pixels back to data.
    fn attrs(&self, name: &str) -> String {
        format!(
            " data-{name}0=\"{}\" data-{name}1=\"{}\" data-p{name}0=\"{:.1}\" data-p{name}1=\"{:.1}\" data-{name}log=\"{}\"",
            self.lo, self.hi, self.p0, self.p1, self.log
        )
    }
}

fn nice_step(range: f64) -> f64 {
    let rough = range / 5.0;
    let mag = 10f64.powf(rough.log10().floor());
    let f = rough / mag;
    let nice = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .find(|&n| f <= n)
        .unwrap_or(10.0);
    nice * mag
}

/// A number for an axis or a table: SI suffixes above 10^4, up to 4 significant
/// digits below.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if a == 0.0 {
        "0".into()
    } else if a >= 1e9 {
        trim(format!("{:.2}", v / 1e9)) + "G"
    } else if a >= 1e6 {
        trim(format!("{:.2}", v / 1e6)) + "M"
    } else if a >= 1e4 {
        trim(format!("{:.1}", v / 1e3)) + "k"
    } else if a >= 100.0 {
        trim(format!("{v:.1}"))
    } else if a >= 1.0 {
        trim(format!("{v:.3}"))
    } else {
        trim(format!("{v:.4}"))
    }
}

fn open(out: &mut String, f: &Frame<'_>, kind: &str, series: usize, x: &Axis, y: &Axis) {
    open_with(out, f, kind, series, x, y, true)
}

fn open_with(
    out: &mut String,
    f: &Frame<'_>,
    kind: &str,
    series: usize,
    x: &Axis,
    y: &Axis,
    x_ticks: bool,
) {
    let _ = write!(
        out,
        "<figure class=\"chart\" data-chart=\"{}\" data-kind=\"{kind}\" data-series=\"{series}\">\
         <figcaption>{}</figcaption>\
         <svg viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{}\"{}{}>",
        esc(f.id),
        esc(f.title),
        esc(f.title),
        x.attrs("x"),
        y.attrs("y"),
    );
    // Grid and ticks.
    for (v, label) in y.ticks() {
        let py = y.px(v);
        let _ = write!(
            out,
            "<line class=\"grid\" x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{py:.1}\" y2=\"{py:.1}\"/>\
             <text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            W - RIGHT,
            LEFT - 5.0,
            py + 4.0,
            esc(&label)
        );
    }
    for (v, label) in x.ticks().into_iter().filter(|_| x_ticks) {
        let px = x.px(v);
        let _ = write!(
            out,
            "<line class=\"grid\" x1=\"{px:.1}\" x2=\"{px:.1}\" y1=\"{TOP}\" y2=\"{:.1}\"/>\
             <text class=\"tick\" x=\"{px:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            H - BOTTOM,
            H - BOTTOM + 15.0,
            esc(&label)
        );
    }
    let _ = write!(
        out,
        "<rect class=\"frame\" x=\"{LEFT}\" y=\"{TOP}\" width=\"{:.1}\" height=\"{:.1}\"/>\
         <text class=\"label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\
         <text class=\"label\" transform=\"translate(14 {:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        W - LEFT - RIGHT,
        H - TOP - BOTTOM,
        (LEFT + W - RIGHT) / 2.0,
        H - 8.0,
        esc(f.x_label),
        (TOP + H - BOTTOM) / 2.0,
        esc(f.y_label),
    );
}

fn close(out: &mut String, names: &[&str]) {
    out.push_str("<line class=\"cursor\" x1=\"0\" x2=\"0\" y1=\"0\" y2=\"0\"/></svg>");
    out.push_str("<div class=\"legend\">");
    for (i, n) in names.iter().enumerate() {
        let _ = write!(
            out,
            "<span><i style=\"background:{}\"></i>{}</span>",
            COLORS[i % COLORS.len()],
            esc(n)
        );
    }
    out.push_str("<output class=\"readout\"></output></div></figure>\n");
}

fn bounds(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values
        .filter(|v| v.is_finite())
        .fold(None, |acc, v| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
        })
}

/// A line chart over a numeric x; `marks` are vertical dashed lines at `(x, kind)`:
/// `power_loss` (or `power_loss_unrecovered`) in red, anything else (`drain`) in grey.
pub fn lines(f: &Frame<'_>, series: &[Line], x_log: bool, marks: &[(f64, &str)]) -> String {
    let xs = bounds(series.iter().flat_map(|s| s.points.iter().map(|p| p.0)));
    let ys = bounds(
        series
            .iter()
            .flat_map(|s| s.points.iter().filter_map(|p| p.1)),
    );
    let (x0, x1) = xs.unwrap_or((0.0, 1.0));
    let (y0, y1) = ys.unwrap_or((0.0, 1.0));
    let x = Axis::new(
        if x_log { x0 } else { x0.min(0.0) },
        x1,
        LEFT,
        W - RIGHT,
        x_log,
    );
    let y = Axis::new(y0.min(0.0), y1 * 1.05, H - BOTTOM, TOP, false);
    let mut out = String::new();
    open(&mut out, f, "line", series.len(), &x, &y);
    for &(m, kind) in marks {
        let px = x.px(m);
        let (class, what) = if kind.starts_with("power_loss") {
            ("mark", "power loss")
        } else {
            ("mark other", kind)
        };
        let _ = write!(
            out,
            "<line class=\"{class}\" data-mark=\"{}\" x1=\"{px:.1}\" x2=\"{px:.1}\" y1=\"{TOP}\" y2=\"{:.1}\"><title>{} at {} s</title></line>",
            esc(kind),
            H - BOTTOM,
            esc(what),
            fmt_num(m)
        );
    }
    for (i, s) in series.iter().enumerate() {
        let mut d = String::with_capacity(16 * s.points.len());
        let (mut n, mut pen_down, mut run) = (0, false, 0);
        for &(px, py) in &s.points {
            match py {
                Some(py) if py.is_finite() => {
                    let _ = write!(
                        d,
                        "{}{:.1} {:.1}",
                        if pen_down { "L" } else { "M" },
                        x.px(px),
                        y.px(py)
                    );
                    pen_down = true;
                    n += 1;
                    run += 1;
                }
                _ => {
                    if run == 1 {
                        d.push_str("l0 0");
                    }
                    pen_down = false;
                    run = 0;
                }
            }
        }
        if run == 1 {
            d.push_str("l0 0");
        }
        let _ = write!(
            out,
            "<path class=\"series\" data-series=\"{}\" data-points=\"{n}\" stroke=\"{}\" d=\"{d}\"/>",
            esc(&s.name),
            COLORS[i % COLORS.len()]
        );
    }
    let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
    close(&mut out, &names);
    out
}

/// Histograms over a numeric x, one per series, overlaid (translucent).
pub fn histograms(f: &Frame<'_>, series: &[Bars]) -> String {
    let xs = bounds(
        series
            .iter()
            .flat_map(|s| s.bars.iter().flat_map(|b| [b.0, b.1])),
    );
    let ys = bounds(series.iter().flat_map(|s| s.bars.iter().map(|b| b.2)));
    let (x0, x1) = xs.unwrap_or((0.0, 1.0));
    let x = Axis::new(x0, x1, LEFT, W - RIGHT, false);
    let y = Axis::new(0.0, ys.map_or(1.0, |y| y.1 * 1.05), H - BOTTOM, TOP, false);
    let mut out = String::new();
    open(&mut out, f, "histogram", series.len(), &x, &y);
    for (i, s) in series.iter().enumerate() {
        let _ = write!(
            out,
            "<g class=\"series\" data-series=\"{}\" data-points=\"{}\" fill=\"{}\">",
            esc(&s.name),
            s.bars.len(),
            COLORS[i % COLORS.len()]
        );
        for &(from, to, v) in &s.bars {
            let (px0, px1) = (x.px(from), x.px(to));
            let (py0, py1) = (y.px(v), y.px(0.0));
            let _ = write!(
                out,
                "<rect x=\"{px0:.1}\" y=\"{py0:.1}\" width=\"{:.1}\" height=\"{:.1}\"><title>{}: {}..{}: {}</title></rect>",
                (px1 - px0).max(1.0),
                (py1 - py0).max(0.0),
                esc(&s.name),
                fmt_num(from),
                fmt_num(to),
                fmt_num(v)
            );
        }
        out.push_str("</g>");
    }
    let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
    close(&mut out, &names);
    out
}

/// Grouped bars over categories: one bar per series in each category.
pub fn grouped_bars(f: &Frame<'_>, categories: &[&str], series: &[(String, Vec<f64>)]) -> String {
    let ys = bounds(series.iter().flat_map(|s| s.1.iter().copied()));
    let n = categories.len().max(1) as f64;
    let x = Axis::new(0.0, n, LEFT, W - RIGHT, false);
    let y = Axis::new(0.0, ys.map_or(1.0, |y| y.1 * 1.05), H - BOTTOM, TOP, false);
    let mut out = String::new();
    // No numeric x ticks: category labels instead.
    open_with(&mut out, f, "bars", series.len(), &x, &y, false);
    let slot = (W - LEFT - RIGHT) / n;
    let bar = slot * 0.8 / series.len().max(1) as f64;
    for (c, name) in categories.iter().enumerate() {
        let _ = write!(
            out,
            "<text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            LEFT + slot * (c as f64 + 0.5),
            H - BOTTOM + 15.0,
            esc(name)
        );
    }
    for (i, (name, values)) in series.iter().enumerate() {
        let _ = write!(
            out,
            "<g class=\"series\" data-series=\"{}\" data-points=\"{}\" fill=\"{}\">",
            esc(name),
            values.len(),
            COLORS[i % COLORS.len()]
        );
        for (c, &v) in values.iter().enumerate() {
            let px = LEFT + slot * (c as f64 + 0.1) + bar * i as f64;
            let (py0, py1) = (y.px(v), y.px(0.0));
            let _ = write!(
                out,
                "<rect x=\"{px:.1}\" y=\"{py0:.1}\" width=\"{bar:.1}\" height=\"{:.1}\"><title>{}: {} {}</title></rect>",
                (py1 - py0).max(0.0),
                esc(name),
                esc(categories.get(c).copied().unwrap_or("")),
                fmt_num(v)
            );
        }
        out.push_str("</g>");
    }
    let names: Vec<&str> = series.iter().map(|s| s.0.as_str()).collect();
    close(&mut out, &names);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_counts_its_points_and_breaks_at_gaps() {
        let s = lines(
            &Frame {
                id: "t",
                title: "T <1>",
                x_label: "x",
                y_label: "y",
            },
            &[Line {
                name: "a&b".into(),
                points: vec![
                    (0.0, Some(1.0)),
                    (1.0, None),
                    (2.0, Some(3.0)),
                    (3.0, Some(2.0)),
                ],
            }],
            false,
            &[(1.5, "power_loss")],
        );
        assert!(s.contains("data-series=\"1\""), "{s}");
        assert!(s.contains("data-points=\"3\""), "{s}");
        assert!(s.contains("T &lt;1&gt;") && s.contains("a&amp;b"), "{s}");
        assert!(
            s.contains("l0 0"),
            "the lone first point is drawn as a dot: {s}"
        );
        assert!(s.contains("class=\"mark\""));
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(fmt_num(0.0), "0");
        assert_eq!(fmt_num(12345.0), "12.3k");
        assert_eq!(fmt_num(2_500_000.0), "2.5M");
        assert_eq!(fmt_num(1.5), "1.5");
        assert_eq!(fmt_num(0.25), "0.25");
        assert_eq!(fmt_num(250.0), "250");
    }

    #[test]
    fn log_axes_span_whole_decades() {
        let a = Axis::new(150.0, 20_000.0, 0.0, 100.0, true);
        let t: Vec<f64> = a.ticks().into_iter().map(|t| t.0).collect();
        assert_eq!(t, vec![100.0, 1000.0, 10_000.0, 100_000.0]);
        assert_eq!(a.px(100.0), 0.0);
        assert_eq!(a.px(100_000.0), 100.0);
    }
}
