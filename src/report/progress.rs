//! Figure: best-so-far score against round or time, as a step curve, with the arena's #1 as a
//! horizontal line.

use super::plot::{
    arena_in_view, arena_line, axes, colour, legend, padded, steps, Drawn, Figure, FONT,
};
use plotters::coord::Shift;
use plotters::prelude::*;

/// A best-so-far curve.
pub struct Progress {
    /// The figure's title.
    pub title: String,
    /// What x measures.
    pub x_desc: String,
    /// `(x, best so far)`, x increasing.
    pub points: Vec<(f64, f64)>,
    /// The arena's #1 score, when the problem file lists one.
    pub arena_first: Option<f64>,
}

impl Figure for Progress {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        let x_end = self.points.last().map_or(1.0, |p| p.0);
        let x_range = padded(self.points.iter().map(|p| p.0).chain([0.0, x_end]));
        let arena = arena_in_view(self.points.iter().map(|p| p.1), self.arena_first);
        let y_range = padded(self.points.iter().map(|p| p.1).chain(arena));
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, (FONT, 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(110)
            .build_cartesian_2d(x_range.clone(), y_range)?;
        axes(&mut chart, self.x_desc.as_str(), "best score")?;
        chart
            .draw_series(LineSeries::new(
                steps(&self.points, x_end),
                colour(0).stroke_width(2),
            ))?
            .label("best so far")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], colour(0)));
        chart.draw_series(
            self.points
                .iter()
                .map(|&p| Circle::new(p, 3, colour(0).filled())),
        )?;
        if let Some(first) = self.arena_first {
            arena_line(&mut chart, &x_range, first, arena.is_some())?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)
    }
}
