//! Figures as data that draw themselves on any plotters backend, saved as PNG and SVG side by
//! side. Text is rendered with an embedded DejaVu Sans (through ab_glyph), so no system font
//! library is needed.

use super::digits;
use crate::atomic_file;
use crate::error::{MiloError, Result};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::ops::Range;
use std::path::Path;
use std::sync::Once;

/// What drawing on a backend `DB` returns.
pub type Drawn<DB> =
    std::result::Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// A figure: its pixel size and how it draws itself on a (white) root area.
pub trait Figure {
    /// Width and height in pixels.
    fn size(&self) -> (u32, u32) {
        (960, 480)
    }

    /// Draws the figure on `root`, the whole canvas (pixel coordinates from its top-left corner).
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB>;
}

/// A chart with plain numeric axes, as every figure draws on.
pub type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The y axis of a best-so-far figure. Without an arena #1 it is the score. With one it is the
/// gap to the #1 on a log scale (`log10` of how far behind it a score is, in the problem's
/// direction), so the #1 stays in view however far the curves are from it: the #1 itself is a
/// dashed line half a decade below the smallest gap, and a score that ties or beats it sits in
/// the band under that line.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScoreAxis {
    /// The score itself.
    Score,
    /// `log10` of the gap to the arena's #1.
    Gap {
        /// The arena's #1.
        first: f64,
        /// +1 when minimising (gap = score − #1), −1 when maximising.
        sign: f64,
        /// Where a score that ties or beats the #1 is drawn: a decade below the smallest gap.
        beaten: f64,
    },
}

impl ScoreAxis {
    /// The axis for `scores`: the gap to `first` when it is known.
    pub fn new(scores: impl Iterator<Item = f64>, first: Option<f64>, maximise: bool) -> Self {
        let Some(first) = first else {
            return ScoreAxis::Score;
        };
        let sign = if maximise { -1.0 } else { 1.0 };
        let smallest = scores
            .map(|s| sign * (s - first))
            .filter(|g| *g > 0.0 && g.is_finite())
            .fold(f64::INFINITY, f64::min);
        let decade = if smallest.is_finite() {
            (smallest.log10() + 1e-9).floor()
        } else {
            0.0
        };
        ScoreAxis::Gap {
            first,
            sign,
            beaten: decade - 1.0,
        }
    }

    /// Where `score` is drawn.
    pub fn y(&self, score: f64) -> f64 {
        match *self {
            ScoreAxis::Score => score,
            ScoreAxis::Gap {
                first,
                sign,
                beaten,
            } => {
                let gap = sign * (score - first);
                if gap > 0.0 {
                    gap.log10()
                } else {
                    beaten
                }
            }
        }
    }

    /// The y range for `scores`, the #1's line and band included.
    pub fn range(&self, scores: impl Iterator<Item = f64>) -> Range<f64> {
        let ys = scores.map(|s| self.y(s));
        match *self {
            ScoreAxis::Score => padded(ys),
            ScoreAxis::Gap { beaten, .. } => {
                let high = ys.fold(beaten + 1.0, f64::max);
                beaten - 0.3..high.ceil().max(beaten + 1.0) + 0.3
            }
        }
    }

    /// The axis's description.
    pub fn desc(&self) -> &'static str {
        match self {
            ScoreAxis::Score => "best score",
            ScoreAxis::Gap { .. } => "gap to the arena #1 (log scale)",
        }
    }

    /// The tick label at `y` on an axis spanning `span`: a score with the digits the span
    /// needs ([`digits::axis_tick`]), or a power of ten of the gap (blank between decades,
    /// "ties or beats" in the band under the #1).
    pub fn tick(&self, y: f64, span: f64) -> String {
        match *self {
            ScoreAxis::Score => digits::axis_tick(y, span),
            ScoreAxis::Gap { beaten, .. } if y < beaten + 0.5 => match (y - beaten).abs() < 1e-9 {
                true => "ties/beats".into(),
                false => String::new(),
            },
            ScoreAxis::Gap { .. } => match (y - y.round()).abs() < 1e-9 {
                true => format!("1e{}", y.round() as i64),
                false => String::new(),
            },
        }
    }

    /// Draws the grid and the axes, then the arena's #1 across `x_range` (when known) with its
    /// legend entry.
    pub fn draw_axes<DB: DrawingBackend>(
        &self,
        chart: &mut Chart<'_, DB>,
        x_desc: &str,
        x_range: &Range<f64>,
    ) -> Drawn<DB> {
        let (x_span, y_span) = spans(chart);
        let tick = |y: &f64| self.tick(*y, y_span);
        let x_tick = |x: &f64| digits::axis_tick(*x, x_span);
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(x_desc)
            .y_desc(self.desc())
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .x_label_formatter(&x_tick)
            .y_label_formatter(&tick);
        mesh.draw()?;
        if let ScoreAxis::Gap { first, beaten, .. } = *self {
            let y = beaten + 0.5;
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(x_range.start, y), (x_range.end, y)],
                    8,
                    5,
                    RED.stroke_width(2),
                ))?
                .label(format!(
                    "arena #1 ({}): gap 0; below the line ties or beats it",
                    digits::tick(first)
                ))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], RED));
        }
        Ok(())
    }
}

/// The widths of a chart's x and y ranges.
fn spans<DB: DrawingBackend>(chart: &Chart<'_, DB>) -> (f64, f64) {
    let (x, y) = (chart.x_range(), chart.y_range());
    (x.end - x.start, y.end - y.start)
}

/// Pixels of the y label area that fit the tick labels of `range` ([`digits::axis_tick`],
/// 13 px text) beside the axis description.
pub fn y_label_area(range: &Range<f64>) -> u32 {
    let span = range.end - range.start;
    let widest = (0..=10)
        .map(|k| range.start + span * k as f64 / 10.0)
        .map(|y| digits::axis_tick(y, span).chars().count())
        .max()
        .unwrap_or(1);
    48 + 8 * widest as u32
}

/// Draws the grid and the axes with their labels, in the figures' font.
pub fn axes<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
    x_desc: &str,
    y_desc: &str,
) -> Drawn<DB> {
    let (x_span, y_span) = spans(chart);
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&|x| digits::axis_tick(*x, x_span))
        .y_label_formatter(&|y| digits::axis_tick(*y, y_span))
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 14))
        .draw()
}

/// Draws the legend box at `position`.
pub fn legend<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
    position: SeriesLabelPosition,
) -> Drawn<DB> {
    chart
        .configure_series_labels()
        .position(position)
        .label_font((FONT, 12))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .draw()
}

/// What a legend entry drawn outside a chart shows before its label.
#[derive(Clone, Copy, Debug)]
pub enum Mark {
    /// A line in this style.
    Line(ShapeStyle),
    /// A dashed line in this colour.
    Dashed(RGBColor),
    /// A filled dot.
    Dot(RGBColor),
    /// A hollow dot with a cross (a rejected node).
    Crossed(RGBColor),
}

/// The width of `label` in a legend's 12 px text (estimated from its length if the font
/// cannot measure it).
fn text_width<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, label: &str) -> u32 {
    let style: TextStyle = (FONT, 12).into();
    area.estimate_text_size(label, &style)
        .map_or(7 * label.chars().count() as u32, |size| size.0)
}

/// Height of one row of [`legend_below`].
const LEGEND_ROW: u32 = 20;

/// The rows of a legend of `labels` laid out left to right within `width` pixels: each row's
/// entries as indices.
fn legend_rows<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    labels: &[&str],
    width: u32,
) -> Vec<Vec<usize>> {
    let mut rows: Vec<Vec<usize>> = Vec::new();
    let mut used = 0;
    for (k, label) in labels.iter().enumerate() {
        let entry = 30 + text_width(area, label) + 24;
        if rows.is_empty() || used + entry > width {
            rows.push(Vec::new());
            used = 0;
        }
        rows.last_mut().expect("a row").push(k);
        used += entry;
    }
    rows
}

/// Splits `root` into the chart's area and a strip under it that holds the legend of
/// `entries`, so the legend never covers what the chart draws; draws the legend there.
pub fn legend_below<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    entries: &[(&str, Mark)],
) -> std::result::Result<DrawingArea<DB, Shift>, DrawingAreaErrorKind<DB::ErrorType>> {
    let (width, height) = root.dim_in_pixel();
    let labels: Vec<&str> = entries.iter().map(|e| e.0).collect();
    let rows = legend_rows(root, &labels, width.saturating_sub(40));
    let strip = LEGEND_ROW * rows.len() as u32 + 10;
    let (chart, legend) = root.split_vertically(height.saturating_sub(strip));
    for (r, row) in rows.iter().enumerate() {
        let y = 4 + (LEGEND_ROW * r as u32 + LEGEND_ROW / 2) as i32;
        let mut x = 20;
        for &k in row {
            let (label, mark) = entries[k];
            match mark {
                Mark::Line(style) => {
                    legend.draw(&PathElement::new(vec![(x, y), (x + 22, y)], style))?
                }
                Mark::Dashed(colour) => {
                    for dash in [0, 9, 18] {
                        legend.draw(&PathElement::new(
                            vec![(x + dash, y), (x + dash + 5, y)],
                            colour.stroke_width(1),
                        ))?;
                    }
                }
                Mark::Dot(colour) => legend.draw(&Circle::new((x + 11, y), 5, colour.filled()))?,
                Mark::Crossed(colour) => {
                    legend.draw(&Circle::new((x + 11, y), 5, colour.stroke_width(2)))?;
                    legend.draw(&Cross::new((x + 11, y), 3, colour.stroke_width(2)))?;
                }
            }
            legend.draw(&Text::new(label, (x + 30, y - 7), (FONT, 12)))?;
            x += 30 + text_width(&legend, label) as i32 + 24;
        }
    }
    Ok(chart)
}

/// The font family every figure uses (the name plotters gives `FontFamily::SansSerif`).
pub const FONT: &str = "sans-serif";

/// Registers the embedded DejaVu Sans as the sans-serif font (once per process).
fn register_fonts() {
    static FONTS: Once = Once::new();
    FONTS.call_once(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
            .unwrap_or_else(|_| panic!("the embedded DejaVu Sans is a valid font"));
    });
}

/// Writes `OUT/STEM.png` and `OUT/STEM.svg`.
pub fn save(figure: &impl Figure, out: &Path, stem: &str) -> Result<()> {
    register_fonts();
    let size = figure.size();
    let png = out.join(format!("{stem}.png"));
    // The bitmap backend writes the file itself (format by extension): into a temporary sibling.
    atomic_file::write_through(&png, |temp| {
        let root = BitMapBackend::new(temp, size).into_drawing_area();
        root.fill(&WHITE)
            .and_then(|()| figure.draw(&root))
            .and_then(|()| root.present())
            .map_err(|e| failed(&png, e))
    })?;
    let svg = out.join(format!("{stem}.svg"));
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, size).into_drawing_area();
        root.fill(&WHITE)
            .and_then(|()| figure.draw(&root))
            .and_then(|()| root.present())
            .map_err(|e| failed(&svg, e))?;
    }
    atomic_file::write(&svg, text.as_bytes())
}

fn failed(path: &Path, error: impl std::fmt::Display) -> MiloError {
    MiloError::Write {
        path: path.to_path_buf(),
        source: std::io::Error::other(format!("cannot draw the figure: {error}")),
    }
}

/// A range covering every finite value given, padded by 5% on each side (0..1 when there is
/// none; a single value gets a small band around it).
pub fn padded(values: impl IntoIterator<Item = f64>) -> Range<f64> {
    let (lo, hi) = values
        .into_iter()
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if lo > hi {
        return 0.0..1.0;
    }
    let pad = if hi > lo {
        0.05 * (hi - lo)
    } else {
        0.05 * lo.abs().max(1e-9)
    };
    lo - pad..hi + pad
}

/// The figures' palette: distinct, readable on white, none of them the arena line's red.
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 90, 200),
    RGBColor(230, 120, 0),
    RGBColor(40, 150, 60),
    RGBColor(140, 60, 170),
    RGBColor(20, 160, 170),
    RGBColor(140, 90, 40),
    RGBColor(220, 60, 150),
    RGBColor(100, 100, 100),
];

/// The `k`-th colour of the figures' palette (it repeats after eight).
pub fn colour(k: usize) -> RGBColor {
    PALETTE[k % PALETTE.len()]
}

/// Steps of a piecewise-constant function: `(x_i, y_i)` held until `x_{i+1}`, the last one
/// until `end`.
pub fn steps(points: &[(f64, f64)], end: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(2 * points.len());
    for (i, &(x, y)) in points.iter().enumerate() {
        let next = points.get(i + 1).map_or(end, |p| p.0);
        out.push((x, y));
        out.push((next, y));
    }
    out
}

/// At most about `limit` points of a long curve: each bucket of consecutive points keeps its
/// lowest and highest (in order), so peaks survive.
pub fn envelope(points: &[(f64, f64)], limit: usize) -> Vec<(f64, f64)> {
    if points.len() <= limit || limit < 2 {
        return points.to_vec();
    }
    let bucket = points.len().div_ceil(limit / 2);
    let mut out = Vec::with_capacity(limit + 2);
    for chunk in points.chunks(bucket) {
        let by_y = |a: &&(f64, f64), b: &&(f64, f64)| a.1.total_cmp(&b.1);
        let (Some(lo), Some(hi)) = (chunk.iter().min_by(by_y), chunk.iter().max_by(by_y)) else {
            continue;
        };
        if lo.0 <= hi.0 {
            out.extend([*lo, *hi]);
        } else {
            out.extend([*hi, *lo]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gap_axis_keeps_the_first_in_view_in_either_direction() {
        // Minimising, 1e-3 and 2e-1 behind the #1, one score ahead of it.
        let axis = ScoreAxis::new([1.001, 1.2, 0.9].into_iter(), Some(1.0), false);
        let ScoreAxis::Gap { beaten, .. } = axis else {
            panic!("{axis:?}")
        };
        assert_eq!(beaten, -4.0);
        assert!((axis.y(1.001) - (-3.0)).abs() < 1e-9);
        assert_eq!(axis.y(0.9), beaten);
        let range = axis.range([1.001, 1.2, 0.9].into_iter());
        assert!(range.start < beaten && range.end > axis.y(1.2), "{range:?}");
        assert_eq!(axis.tick(-3.0, 4.0), "1e-3");
        assert_eq!(axis.tick(-3.5, 4.0), "");
        assert_eq!(axis.tick(beaten, 4.0), "ties/beats");
        // Maximising: a score below the #1 is behind it.
        let axis = ScoreAxis::new([0.9].into_iter(), Some(1.0), true);
        assert!((axis.y(0.9) - 0.1f64.log10()).abs() < 1e-12);
        // Without a #1, the score itself.
        let axis = ScoreAxis::new([0.9].into_iter(), None, true);
        assert_eq!(
            (axis, axis.y(0.9), axis.tick(2.9200000000000017, 1.0)),
            (ScoreAxis::Score, 0.9, "2.92".into())
        );
    }

    struct Label;

    impl Figure for Label {
        fn size(&self) -> (u32, u32) {
            (120, 40)
        }

        fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
            root.draw(&Text::new("milo 1.45", (5, 10), (FONT, 20)))
        }
    }

    #[test]
    fn text_is_rendered_with_the_embedded_font() {
        register_fonts();
        let (w, h) = Label.size();
        let mut pixels = vec![255u8; (w * h * 3) as usize];
        {
            let root = BitMapBackend::with_buffer(&mut pixels, (w, h)).into_drawing_area();
            Label.draw(&root).unwrap();
            root.present().unwrap();
        }
        let inked = pixels.chunks(3).filter(|p| p[0] < 128).count();
        assert!(inked > 50, "only {inked} dark pixels: no text was drawn");
    }

    #[test]
    fn a_legend_below_takes_a_strip_under_the_chart_and_wraps() {
        register_fonts();
        let (w, h) = (300u32, 200u32);
        let mut pixels = vec![255u8; (w * h * 3) as usize];
        let chart_height;
        {
            let root = BitMapBackend::with_buffer(&mut pixels, (w, h)).into_drawing_area();
            let long = "a label long enough to need a row of its own";
            let entries = [("best", Mark::Dot(RED)), (long, Mark::Dashed(BLUE))];
            let chart = legend_below(&root, &entries).unwrap();
            chart_height = chart.dim_in_pixel().1;
            root.present().unwrap();
        }
        // Two rows of 20 px and a margin: the chart keeps the rest, and stays blank.
        assert_eq!(chart_height, h - 50);
        let inked = |rows: std::ops::Range<u32>| {
            rows.flat_map(|y| (0..w).map(move |x| (x, y)))
                .filter(|&(x, y)| pixels[((y * w + x) * 3) as usize] < 200)
                .count()
        };
        assert_eq!(inked(0..chart_height), 0);
        assert!(inked(chart_height..chart_height + 25) > 20, "no first row");
        assert!(inked(chart_height + 25..h) > 20, "no second row");
    }

    #[test]
    fn ranges_steps_and_envelopes() {
        assert_eq!(padded([1.0, 3.0, f64::NAN]), 0.9..3.1);
        assert_eq!(padded([]), 0.0..1.0);
        assert_eq!(
            steps(&[(0.0, 2.0), (1.0, 1.0)], 3.0),
            vec![(0.0, 2.0), (1.0, 2.0), (1.0, 1.0), (3.0, 1.0)]
        );
        let curve: Vec<(f64, f64)> = (0..1000).map(|i| (i as f64, (i % 7) as f64)).collect();
        let reduced = envelope(&curve, 100);
        assert!(reduced.len() <= 102, "{}", reduced.len());
        assert_eq!(reduced.iter().map(|p| p.1).fold(0.0, f64::max), 6.0);
        assert!(reduced.windows(2).all(|w| w[0].0 <= w[1].0));
    }
}
