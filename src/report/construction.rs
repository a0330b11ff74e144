//! Figures: a construction against its task's start, as step functions over [0, 1), and the
//! per-lag quantity whose maximum the score takes (f∗f, or the Erdős correlation), each with its
//! maximum marked.

use super::plot::{
    axes, colour, envelope, legend_below, padded, steps, y_label_area, Drawn, Figure, Mark, FONT,
};
use plotters::coord::Shift;
use plotters::prelude::*;

/// Most points drawn per curve (longer curves keep each bucket's extremes).
const MAX_POINTS: usize = 4000;

/// One curve of a profile figure.
pub struct Curve {
    /// Legend text.
    pub label: String,
    /// The values, one per cell.
    pub values: Vec<f64>,
}

/// Curves over a common domain: cell `i` of a curve of `n` values covers `[i·w/n, (i+1)·w/n)`.
pub struct Profiles {
    /// The figure's title.
    pub title: String,
    /// What y measures.
    pub y_desc: String,
    /// Width of the domain (1 for constructions, 2 for lags).
    pub width: f64,
    /// Whether to mark each curve's maximum.
    pub mark_max: bool,
    /// The curves, drawn in order.
    pub curves: Vec<Curve>,
}

impl Curve {
    /// The curve as steps over `[0, width)`.
    fn points(&self, width: f64) -> Vec<(f64, f64)> {
        let dx = width / self.values.len().max(1) as f64;
        let cells: Vec<(f64, f64)> = self
            .values
            .iter()
            .enumerate()
            .map(|(i, &v)| (i as f64 * dx, v))
            .collect();
        envelope(&steps(&cells, width), MAX_POINTS)
    }

    /// The maximum and the middle of its cell.
    pub fn max(&self, width: f64) -> (f64, f64) {
        let (value, index) = crate::fast::argmax(&self.values);
        let dx = width / self.values.len().max(1) as f64;
        ((index as f64 + 0.5) * dx, value)
    }
}

impl Figure for Profiles {
    fn size(&self) -> (u32, u32) {
        (960, 500)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        let y_range = padded(self.curves.iter().flat_map(|c| c.values.iter().copied()));
        let style = |k: usize| colour(k).stroke_width(if k == 0 { 2 } else { 1 });
        // The legend goes under the chart, where it cannot cover a curve.
        let entries: Vec<(&str, Mark)> = self
            .curves
            .iter()
            .enumerate()
            .map(|(k, c)| (c.label.as_str(), Mark::Line(style(k))))
            .collect();
        let area = legend_below(root, &entries)?;
        let mut chart = ChartBuilder::on(&area)
            .caption(&self.title, (FONT, 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(y_label_area(&y_range))
            .build_cartesian_2d(0.0..self.width, y_range)?;
        axes(&mut chart, "x", self.y_desc.as_str())?;
        // The first curve is drawn last, on top.
        for (k, curve) in self.curves.iter().enumerate().rev() {
            chart.draw_series(LineSeries::new(curve.points(self.width), style(k)))?;
            if self.mark_max && !curve.values.is_empty() {
                let (x, y) = curve.max(self.width);
                chart.draw_series([EmptyElement::at((x, y))
                    + TriangleMarker::new((0, 0), 7, colour(k).filled())
                    + Text::new(
                        format!("max {y:.6}"),
                        (8, -6 - 14 * k as i32),
                        (FONT, 12).into_font().color(&colour(k)),
                    )])?;
            }
        }
        Ok(())
    }
}
