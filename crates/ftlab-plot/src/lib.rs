//! Plots made in Rust: line, grouped-bar and stacked-bar charts as SVG, rasterised to PNG with
//! resvg and the bundled DejaVu Sans (so a PNG looks the same on every machine, with or
//! without system fonts).
//!
//! The x axis is categorical (the papers sweep discrete settings: CMT sizes, buffer
//! sizes, thresholds), so points are evenly spaced and labelled with their value.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

use std::fmt::Write as _;
use std::sync::Arc;

const FONT: &[u8] = include_bytes!("../assets/fonts/DejaVuSans.ttf");
const W: f64 = 780.0;
const H: f64 = 440.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 230.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 70.0;
const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// Line, grouped bars or stacked bars.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// One line per series.
    Line,
    /// One bar per series in each category.
    Bar,
    /// One bar per category, the series stacked in it (a breakdown of a total, e.g.
    /// merges by kind); negative values are drawn as 0.
    Stacked,
}

/// One named series: a value (or a gap) per category.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend label.
    pub name: String,
    /// One value per category; `None` is drawn as a small "n/a" where the bar or point
    /// would be, never as a zero.
    pub values: Vec<Option<f64>>,
    /// The paper's value per category where it gives one, drawn as a hollow diamond
    /// beside ours (empty: no paper values).
    pub paper: Vec<Option<f64>>,
}

/// A chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// Title on top.
    pub title: String,
    /// X-axis label.
    pub x_label: String,
    /// Y-axis label.
    pub y_label: String,
    /// Category labels along x.
    pub categories: Vec<String>,
    /// The series.
    pub series: Vec<Series>,
    /// Line or bars.
    pub kind: Kind,
    /// A note under the chart (which workload stands in for the paper's), wrapped to
    /// the chart's width; empty for none.
    pub caption: String,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Round tick step for a range.
fn nice_step(range: f64) -> f64 {
    let raw = range / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

fn fmt_tick(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1e6 {
        let s = format!("{:.2}", v / 1e6);
        s.trim_end_matches('0').trim_end_matches('.').to_string() + "M"
    } else if a >= 1e3 {
        let s = format!("{:.2}", v / 1e3);
        s.trim_end_matches('0').trim_end_matches('.').to_string() + "k"
    } else if a >= 1.0 {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        let s = format!("{v:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// The chart as an SVG document.
pub fn svg(c: &Chart) -> String {
    let (mut lo, mut hi) = (0f64, 0f64);
    if c.kind == Kind::Stacked {
        for i in 0..c.categories.len() {
            hi = hi.max(stack_total(c, i, c.series.len()));
        }
    } else {
        for v in c
            .series
            .iter()
            .flat_map(|s| s.values.iter().chain(&s.paper).flatten().copied())
        {
            lo = lo.min(v);
            hi = hi.max(v);
        }
    }
    if c.kind == Kind::Stacked {
        // A paper marker sits on our stack below its segment.
        for (si, ser) in c.series.iter().enumerate() {
            for (i, p) in ser.paper.iter().enumerate() {
                if let Some(p) = p {
                    hi = hi.max(stack_total(c, i, si) + p.max(0.0));
                }
            }
        }
    }
    if hi == lo {
        hi = lo + 1.0;
    }
    let step = nice_step(hi - lo);
    let lo = (lo / step).floor() * step;
    let hi = (hi / step).ceil() * step;
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let y = |v: f64| TOP + ph * (1.0 - (v - lo) / (hi - lo));
    let n = c.categories.len().max(1);
    let band = pw / n as f64;
    let x = |i: usize| LEFT + band * (i as f64 + 0.5);
    let caption = wrap(&c.caption, CAPTION_CHARS);
    let total_h = H + caption_height(caption.len());
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{total_h}" viewBox="0 0 {W} {total_h}" font-family="DejaVu Sans" font-size="12">"#
    );
    let _ = write!(s, r#"<rect width="{W}" height="{total_h}" fill="white"/>"#);
    for (i, line) in caption.iter().enumerate() {
        let _ = write!(
            s,
            r##"<text x="12" y="{:.1}" font-size="10" fill="#444">{}</text>"##,
            H + 4.0 + CAPTION_LINE * (i as f64 + 0.5),
            esc(line)
        );
    }
    let base = y(0f64.max(lo).min(hi));
    let k = c.series.len().max(1);
    // "n/a" for a missing value, read upwards from `(cx, bottom)` in the series' colour.
    let na = |s: &mut String, cx: f64, bottom: f64, color: &str| {
        let _ = write!(
            s,
            r#"<text x="{cx:.1}" y="{bottom:.1}" font-size="9" fill="{color}" dominant-baseline="middle" transform="rotate(-90 {cx:.1} {bottom:.1})" class="na">n/a</text>"#
        );
    };
    let _ = write!(
        s,
        r#"<text x="{}" y="28" text-anchor="middle" font-size="15">{}</text>"#,
        LEFT + pw / 2.0,
        esc(&c.title)
    );
    // Grid and y ticks.
    let mut t = lo;
    while t <= hi + step * 1e-9 {
        let yy = y(t);
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + pw,
            LEFT - 6.0,
            yy + 4.0,
            fmt_tick(t)
        );
        t += step;
    }
    // Axes.
    let _ = write!(
        s,
        r##"<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{:.1}" stroke="#333"/><line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#333"/>"##,
        TOP + ph,
        y(lo.max(0.0).min(hi)),
        LEFT + pw,
        y(lo.max(0.0).min(hi))
    );
    for (i, cat) in c.categories.iter().enumerate() {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            x(i),
            TOP + ph + 18.0,
            esc(cat)
        );
    }
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        LEFT + pw / 2.0,
        H - 22.0,
        esc(&c.x_label)
    );
    let _ = write!(
        s,
        r#"<text x="20" y="{:.1}" text-anchor="middle" transform="rotate(-90 20 {:.1})">{}</text>"#,
        TOP + ph / 2.0,
        TOP + ph / 2.0,
        esc(&c.y_label)
    );
    // Where series `si`'s mark sits in category `i`: its bar's centre, or the category's
    // centre for lines and stacks.
    let bw = band * 0.8 / k as f64;
    let slot = |i: usize, si: usize| match c.kind {
        Kind::Bar => x(i) - band * 0.4 + bw * (si as f64 + 0.5),
        _ => x(i),
    };
    for (si, ser) in c.series.iter().enumerate() {
        let color = COLORS[si % COLORS.len()];
        for (i, v) in ser.values.iter().enumerate() {
            if v.is_none() {
                // Lines and stacks put every series' n/a at the category's centre: fan
                // them out so they do not overlap.
                let cx = match c.kind {
                    Kind::Bar => slot(i, si),
                    _ => x(i) + 10.0 * (si as f64 - (k as f64 - 1.0) / 2.0),
                };
                let bottom = match c.kind {
                    Kind::Stacked => y(stack_total(c, i, c.series.len())) - 3.0,
                    _ => base - 3.0,
                };
                na(&mut s, cx, bottom, color);
            }
        }
        match c.kind {
            Kind::Line => {
                let mut d = String::new();
                let mut pen = false;
                for (i, v) in ser.values.iter().enumerate() {
                    match v {
                        Some(v) => {
                            let _ = write!(
                                d,
                                "{}{:.1},{:.1} ",
                                if pen { "L" } else { "M" },
                                x(i),
                                y(*v)
                            );
                            pen = true;
                            let _ = write!(
                                s,
                                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{color}"/>"#,
                                x(i),
                                y(*v)
                            );
                        }
                        None => pen = false,
                    }
                }
                let _ = write!(
                    s,
                    r#"<path d="{}" fill="none" stroke="{color}" stroke-width="2"/>"#,
                    d.trim_end()
                );
            }
            Kind::Stacked => {
                for (i, v) in ser.values.iter().enumerate() {
                    let v = v.unwrap_or(0.0).max(0.0);
                    if v > 0.0 {
                        let below = stack_total(c, i, si);
                        let top = y(below + v);
                        let _ = write!(
                            s,
                            r#"<rect x="{:.1}" y="{top:.1}" width="{:.1}" height="{:.1}" fill="{color}"/>"#,
                            x(i) - band * 0.3,
                            band * 0.6,
                            y(below) - top
                        );
                    }
                }
            }
            Kind::Bar => {
                for (i, v) in ser.values.iter().enumerate() {
                    if let Some(v) = v {
                        let bx = x(i) - band * 0.4 + bw * si as f64;
                        let (top, h) = if y(*v) < base {
                            (y(*v), base - y(*v))
                        } else {
                            (base, y(*v) - base)
                        };
                        let _ = write!(
                            s,
                            r#"<rect x="{bx:.1}" y="{top:.1}" width="{:.1}" height="{h:.1}" fill="{color}"/>"#,
                            bw.max(1.0)
                        );
                    }
                }
            }
        }
        for (i, p) in ser.paper.iter().enumerate() {
            if let Some(p) = p {
                let py = match c.kind {
                    Kind::Stacked => y(stack_total(c, i, si) + p.max(0.0)),
                    _ => y(*p),
                };
                diamond(&mut s, slot(i, si), py, color);
            }
        }
        let ly = TOP + 10.0 + 20.0 * si as f64;
        let lx = W - RIGHT + 15.0;
        let _ = write!(
            s,
            r#"<rect x="{lx}" y="{:.1}" width="14" height="10" fill="{color}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            ly - 9.0,
            lx + 20.0,
            ly,
            esc(&ser.name)
        );
    }
    if c.series
        .iter()
        .any(|ser| ser.paper.iter().any(Option::is_some))
    {
        let ly = TOP + 10.0 + 20.0 * c.series.len() as f64;
        let lx = W - RIGHT + 15.0;
        diamond(&mut s, lx + 7.0, ly - 4.0, "#333");
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{ly:.1}">the paper's value</text>"#,
            lx + 20.0
        );
    }
    s.push_str("</svg>\n");
    s
}

/// Characters per caption line (10 px type over the chart's width).
const CAPTION_CHARS: usize = 128;
/// Height of a caption line.
const CAPTION_LINE: f64 = 13.0;

/// The extra height a caption of `lines` lines takes below the chart.
fn caption_height(lines: usize) -> f64 {
    if lines == 0 {
        0.0
    } else {
        CAPTION_LINE * lines as f64 + 8.0
    }
}

/// `text` in lines of at most `width` characters, broken at spaces (a longer word
/// gets a line of its own).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// A hollow diamond (the paper's value) centred on `(cx, cy)`, outlined in `color`.
fn diamond(s: &mut String, cx: f64, cy: f64, color: &str) {
    let r = 5.5;
    let _ = write!(
        s,
        r#"<path d="M{:.1},{cy:.1} L{cx:.1},{:.1} L{:.1},{cy:.1} L{cx:.1},{:.1} Z" fill="white" stroke="{color}" stroke-width="2" class="paper"/>"#,
        cx - r,
        cy - r,
        cx + r,
        cy + r
    );
}

/// Sum of the first `n` series at category `i` (gaps and negative values count as 0).
fn stack_total(c: &Chart, i: usize, n: usize) -> f64 {
    c.series[..n]
        .iter()
        .map(|s| s.values.get(i).copied().flatten().unwrap_or(0.0).max(0.0))
        .sum()
}

/// Charts made by [`svg`] side by side, `columns` to a row (facets of one figure), as
/// one SVG document: each chart keeps its size and is placed as a nested `<svg>`.
pub fn grid(charts: &[String], columns: usize) -> String {
    let columns = columns.clamp(1, charts.len().max(1));
    let rows = charts.len().div_ceil(columns).max(1);
    // A chart with a caption is taller than `H`: each row is as tall as its tallest.
    let height = |c: &String| -> f64 {
        c.split_once(" height=\"")
            .and_then(|(_, rest)| rest.split_once('"'))
            .and_then(|(h, _)| h.parse().ok())
            .unwrap_or(H)
    };
    let row_h: Vec<f64> = charts
        .chunks(columns)
        .map(|row| row.iter().map(height).fold(H, f64::max))
        .collect();
    let row_y = |r: usize| row_h[..r].iter().sum::<f64>();
    let (w, h) = (W * columns as f64, row_y(rows).max(H));
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="DejaVu Sans" font-size="12">"#
    );
    let _ = write!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    for (i, c) in charts.iter().enumerate() {
        let (x, y) = (W * (i % columns) as f64, row_y(i / columns));
        let inner = c.replacen(
            r#"<svg xmlns="http://www.w3.org/2000/svg""#,
            &format!(r#"<svg x="{x}" y="{y}""#),
            1,
        );
        s.push_str(&inner);
    }
    s.push_str("</svg>");
    s
}

/// Rasterises an SVG made by [`svg`] (or [`grid`]) to PNG bytes.
pub fn png(svg: &str) -> Result<Vec<u8>, String> {
    let mut db = resvg::usvg::fontdb::Database::new();
    db.load_font_data(FONT.to_vec());
    let opt = resvg::usvg::Options {
        fontdb: Arc::new(db),
        ..Default::default()
    };
    let tree = resvg::usvg::Tree::from_str(svg, &opt).map_err(|e| format!("svg: {e}"))?;
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or("cannot allocate the image")?;
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().map_err(|e| format!("png: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grid_places_every_chart_and_rasterises() {
        let one = svg(&chart(Kind::Line));
        let g = grid(&[one.clone(), one.clone(), one], 2);
        assert!(g.starts_with(&format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}""#,
            2.0 * W,
            2.0 * H
        )));
        assert_eq!(g.matches("<svg").count(), 4);
        assert!(g.contains(&format!(r#"<svg x="0" y="{H}""#)));
        let p = png(&g).unwrap();
        // PNG width, big-endian at bytes 16..20.
        assert_eq!(
            u32::from_be_bytes(p[16..20].try_into().unwrap()),
            2 * W as u32
        );
    }

    fn chart(kind: Kind) -> Chart {
        Chart {
            title: "hit ratio vs CMT size".into(),
            x_label: "CMT (KiB)".into(),
            y_label: "hit ratio".into(),
            categories: vec!["128".into(), "256".into(), "512".into()],
            series: vec![
                Series {
                    name: "dftl".into(),
                    values: vec![Some(0.5), Some(0.7), None],
                    paper: vec![],
                },
                Series {
                    name: "tpm".into(),
                    values: vec![Some(0.8), Some(0.9), Some(0.95)],
                    paper: vec![],
                },
            ],
            kind,
            caption: String::new(),
        }
    }

    #[test]
    fn a_missing_value_is_drawn_as_na_never_as_zero() {
        for kind in [Kind::Line, Kind::Bar, Kind::Stacked] {
            let s = svg(&chart(kind));
            assert_eq!(s.matches(">n/a<").count(), 1, "{kind:?}: {s}");
            assert!(
                s.contains(r##"fill="#1f77b4" dominant-baseline"##),
                "{kind:?}"
            );
        }
        // Bars: three of one series, two of the other (no zero-height bar for the gap).
        let bars = svg(&chart(Kind::Bar));
        assert_eq!(bars.matches(r#"<rect x="#).count(), 5 + 2, "{bars}");
    }

    #[test]
    fn paper_values_are_diamonds_with_a_legend_entry_and_fit_the_axis() {
        let mut c = chart(Kind::Bar);
        assert!(!svg(&c).contains("the paper's value"));
        c.series[1].paper = vec![None, Some(1.7), None];
        let s = svg(&c);
        assert_eq!(
            s.matches(r#"class="paper""#).count(),
            1 + 1,
            "marker + legend"
        );
        assert!(s.contains("the paper's value"));
        assert!(s.contains(">2<"), "the axis reaches the paper's 1.7: {s}");
        for kind in [Kind::Line, Kind::Stacked] {
            c.kind = kind;
            assert_eq!(svg(&c).matches(r#"class="paper""#).count(), 2, "{kind:?}");
        }
    }

    #[test]
    fn a_caption_is_wrapped_under_the_chart_and_makes_it_taller() {
        let mut c = chart(Kind::Line);
        c.caption = "Workload: ".to_string() + &"stand-in trace ".repeat(20);
        let s = svg(&c);
        let lines = wrap(&c.caption, CAPTION_CHARS);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines.iter().all(|l| l.chars().count() <= CAPTION_CHARS));
        let h = H + caption_height(3);
        assert!(s.starts_with(&format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}""#
        )));
        assert_eq!(s.matches(r##"font-size="10" fill="#444""##).count(), 3);
        // A grid row is as tall as its tallest chart.
        let plain = svg(&chart(Kind::Line));
        let g = grid(&[s.clone(), plain.clone(), plain], 2);
        assert!(
            g.contains(&format!(r#"height="{}""#, h + H)),
            "{}",
            &g[..200]
        );
        assert!(g.contains(&format!(r#"<svg x="0" y="{h}""#)));
        assert_eq!(wrap("", 10), Vec::<String>::new());
        assert_eq!(
            wrap("averyveryverylongword b", 5),
            ["averyveryverylongword", "b"]
        );
        png(&s).unwrap();
    }

    #[test]
    fn svg_has_axes_series_and_legend() {
        for kind in [Kind::Line, Kind::Bar, Kind::Stacked] {
            let s = svg(&chart(kind));
            assert!(s.starts_with("<svg"));
            assert!(s.contains("hit ratio vs CMT size"));
            assert!(s.contains(">dftl<") && s.contains(">tpm<"));
            assert!(s.contains(">256<"));
        }
    }

    #[test]
    fn png_renders_with_the_bundled_font() {
        let bytes = png(&svg(&chart(Kind::Line))).unwrap();
        if let Some(dir) = std::env::var_os("FTLAB_PLOT_SAMPLE") {
            std::fs::write(std::path::Path::new(&dir).join("line.png"), &bytes).unwrap();
            let bar = png(&svg(&chart(Kind::Bar))).unwrap();
            std::fs::write(std::path::Path::new(&dir).join("bar.png"), bar).unwrap();
            let stacked = png(&svg(&chart(Kind::Stacked))).unwrap();
            std::fs::write(std::path::Path::new(&dir).join("stacked.png"), stacked).unwrap();
        }
        assert_eq!(&bytes[1..4], b"PNG");
        assert!(bytes.len() > 5000, "{}", bytes.len());
    }

    #[test]
    fn stacked_bars_reach_the_category_total() {
        let c = chart(Kind::Stacked);
        // Category 1 stacks 0.7 + 0.9 = 1.6: the axis must reach it (to 2 in steps of
        // 0.5; side by side, the bars stop at 0.95 and so does the axis, at 1).
        assert!((stack_total(&c, 1, 2) - 1.6).abs() < 1e-12);
        assert_eq!(stack_total(&c, 2, 2), 0.95, "a gap counts as 0");
        let s = svg(&c);
        assert!(
            s.contains(">2<") && s.contains(">1.5<"),
            "axis short of 1.6: {s}"
        );
        assert!(!svg(&chart(Kind::Bar)).contains(">1.5<"));
        assert_eq!(s.matches("<rect").count(), 1 + 5 + 2, "{s}");
    }

    #[test]
    fn ticks_are_round() {
        assert_eq!(nice_step(0.95), 0.2);
        assert_eq!(nice_step(1000.0), 200.0);
        assert_eq!(fmt_tick(0.25), "0.25");
        assert_eq!(fmt_tick(2500.0), "2.5k");
    }
}
