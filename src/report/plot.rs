//! Figures as data that draw themselves on any plotters backend, saved as PNG and SVG side by
//! side. Text is rendered with an embedded DejaVu Sans (through ab_glyph), so no system font
//! library is needed.

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

/// The arena's #1 if its line belongs on a chart of `values`: within three times their spread of
/// them (a line far off would flatten every curve into one).
pub fn arena_in_view(values: impl Iterator<Item = f64> + Clone, first: Option<f64>) -> Option<f64> {
    let first = first?;
    let low = values.clone().fold(f64::INFINITY, f64::min);
    let high = values.fold(f64::NEG_INFINITY, f64::max);
    let reach = 3.0 * (high - low);
    (!(low.is_finite() && high.is_finite()) || (first >= low - reach && first <= high + reach))
        .then_some(first)
}

/// Draws the arena's #1 as a dashed red line across `x_range` with its legend entry; when it is
/// not `shown` (off the scale), only the legend entry says where it is.
pub fn arena_line<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    x_range: &Range<f64>,
    first: f64,
    shown: bool,
) -> Drawn<DB> {
    let (points, label) = if shown {
        (
            vec![(x_range.start, first), (x_range.end, first)],
            format!("arena #1 ({first})"),
        )
    } else {
        (vec![], format!("arena #1 ({first}, off the scale)"))
    };
    chart
        .draw_series(DashedLineSeries::new(points, 8, 5, RED.stroke_width(2)))?
        .label(label)
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], RED));
    Ok(())
}

/// Draws the grid and the axes with their labels, in the figures' font.
pub fn axes<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
    x_desc: &str,
    y_desc: &str,
) -> Drawn<DB> {
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
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
