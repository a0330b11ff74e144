//! The live status line of the long commands (`optimize`, `evolve`, `bench`, `campaign`): on a
//! terminal, one line redrawn in place every second (indicatif); otherwise one plain line on
//! standard error at a steady interval, so the log of a batch job stays short (no escape codes).
//! Detail lines go above it.
//!
//! A command with a [`Gauge`] gets a bar: the gauge is read from the run's live counters on
//! every tick, so the bar, the rate and the time left move between the run's events too.
//!
//! The interval of the plain line is [`DEFAULT_INTERVAL`], or `MILO_STATUS_SECONDS` when set.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Seconds between two plain status lines when standard error is not a terminal.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(30);

/// The environment variable that sets the plain line's interval in seconds.
pub const INTERVAL_VARIABLE: &str = "MILO_STATUS_SECONDS";

/// Where a run stands, read from its live counters on every tick.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gauge {
    /// The part done, in \[0, 1\] (the bar), when known.
    pub fraction: Option<f64>,
    /// The time left, when known.
    pub left: Option<Duration>,
    /// Figures recomputed on every tick (a rate, counts), shown before the status text.
    pub figures: String,
}

/// Reads a run's [`Gauge`] on every tick.
pub type GaugeFn = Box<dyn Fn() -> Gauge + Send>;

/// What the line shows: the status text, after the gauge's figures when there is one.
#[derive(Default)]
struct Shown {
    text: String,
    gauge: Option<GaugeFn>,
}

impl Shown {
    /// The gauge now, and the message: the time left, the figures, the text.
    fn render(&self) -> (Option<Gauge>, String) {
        let Some(gauge) = self.gauge.as_ref().map(|read| read()) else {
            return (None, self.text.clone());
        };
        let left = gauge.left.map(|left| format!("{} left", clock(left)));
        let figures = (!gauge.figures.is_empty()).then(|| gauge.figures.clone());
        let text = (!self.text.is_empty()).then(|| self.text.clone());
        let message = [left, figures, text]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" · ");
        (Some(gauge), message)
    }
}

/// The bar's length: a gauge's fraction is drawn in thousandths.
const BAR_STEPS: u64 = 1000;

/// Draws the rendered line on the terminal's bar.
fn draw(bar: &ProgressBar, (gauge, message): (Option<Gauge>, String)) {
    if let Some(fraction) = gauge.and_then(|g| g.fraction) {
        bar.set_position((fraction.clamp(0.0, 1.0) * BAR_STEPS as f64) as u64);
    }
    bar.set_message(message);
}

/// The plain line of a rendered line: the percentage done, then the message.
fn plain((gauge, message): (Option<Gauge>, String)) -> String {
    match gauge.and_then(|g| g.fraction) {
        Some(fraction) => format!("{:.0}% · {message}", 100.0 * fraction.clamp(0.0, 1.0)),
        None => message,
    }
}

/// A status line on standard error (see the module documentation).
pub struct StatusLine {
    hidden: bool,
    shown: Arc<Mutex<Shown>>,
    bar: Option<ProgressBar>,
    ticker: Option<(Sender<()>, JoinHandle<()>)>,
}

impl StatusLine {
    /// Starts the status line, prefixed with `name` in plain lines; `hidden` (or `-q`) shows
    /// nothing, detail lines included.
    pub fn start(name: &'static str, hidden: bool) -> StatusLine {
        let shown = Arc::new(Mutex::new(Shown::default()));
        if hidden || super::is_quiet() {
            return StatusLine {
                hidden: true,
                shown,
                bar: None,
                ticker: None,
            };
        }
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(Some(BAR_STEPS), ProgressDrawTarget::stderr());
            bar.set_style(spinner_style());
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        });
        // On a terminal the ticker redraws the line every second from the live counters;
        // otherwise it prints it once per interval.
        let (stop, stopped) = mpsc::channel::<()>();
        let ticker = {
            let shown = Arc::clone(&shown);
            let bar = bar.clone();
            let interval = match bar {
                Some(_) => Duration::from_secs(1),
                None => interval(),
            };
            let started = Instant::now();
            std::thread::spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(interval) {
                    let Ok(line) = shown.lock().map(|s| s.render()) else {
                        continue;
                    };
                    match &bar {
                        Some(bar) => draw(bar, line),
                        None if !line.1.is_empty() => {
                            say!("{name} [{}] {}", clock(started.elapsed()), plain(line))
                        }
                        None => {}
                    }
                }
            })
        };
        StatusLine {
            hidden: false,
            shown,
            bar,
            ticker: Some((stop, ticker)),
        }
    }

    /// Replaces the status text.
    pub fn set(&self, text: String) {
        if let Ok(mut shown) = self.shown.lock() {
            shown.text = text;
            if let Some(bar) = &self.bar {
                draw(bar, shown.render());
            }
        }
    }

    /// Reads `gauge` on every tick: a bar of its fraction, its time left and its figures.
    pub fn set_gauge(&self, gauge: GaugeFn) {
        if let Ok(mut shown) = self.shown.lock() {
            shown.gauge = Some(gauge);
            if let Some(bar) = &self.bar {
                bar.set_style(bar_style());
                draw(bar, shown.render());
            }
        }
    }

    /// Prints a detail line on standard error above the status line.
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None if self.hidden => {}
            None => say!("{line}"),
        }
    }

    /// Runs `print` (which writes to standard output) with the status line out of the way.
    pub fn suspend<T>(&self, print: impl FnOnce() -> T) -> T {
        match &self.bar {
            Some(bar) => bar.suspend(print),
            None => print(),
        }
    }
}

impl Drop for StatusLine {
    /// Clears the line on a terminal, and stops the plain ticker.
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        if let Some((stop, ticker)) = self.ticker.take() {
            let _ = stop.send(());
            let _ = ticker.join();
        }
    }
}

/// The terminal line without a gauge: a spinner, the time so far, the text.
fn spinner_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {elapsed} {wide_msg}").expect("valid template")
}

/// The terminal line with a gauge: the time so far, the bar, the percentage, the message.
fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template("{elapsed:>4} [{bar:24}] {percent:>3}% {wide_msg}")
        .expect("valid template")
        .progress_chars("=> ")
}

/// The plain line's interval: `MILO_STATUS_SECONDS` if it is a positive number, else the default.
fn interval() -> Duration {
    std::env::var(INTERVAL_VARIABLE)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e7)
        .map_or(DEFAULT_INTERVAL, Duration::from_secs_f64)
}

/// A duration as `1h02m03s`, `2m03s` or `3s`.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, s) => format!("{h}h{m:02}m{s:02}s"),
    }
}

/// The time left of a count of units, estimated from the units finished so far: each finish
/// sets the pace (time per unit since the start), and between finishes the estimate counts down
/// with the clock.
#[derive(Clone, Debug)]
pub struct Pace {
    started: Instant,
    done: u64,
    at: Instant,
}

impl Pace {
    /// A pace counted from now, nothing done.
    pub fn new() -> Pace {
        Pace::starting(Instant::now())
    }

    fn starting(now: Instant) -> Pace {
        Pace {
            started: now,
            done: 0,
            at: now,
        }
    }

    /// Notes that `done` units are finished now (nothing changes unless the count grew).
    pub fn observe(&mut self, done: u64) {
        self.observe_at(done, Instant::now());
    }

    fn observe_at(&mut self, done: u64, now: Instant) {
        if done > self.done {
            self.done = done;
            self.at = now;
        }
    }

    /// The time one unit takes at the pace so far, once one is finished.
    pub fn per_unit(&self) -> Option<Duration> {
        (self.done > 0).then(|| (self.at - self.started) / self.done as u32)
    }

    /// The time left before `total` units are finished, once one is.
    pub fn left(&self, total: u64) -> Option<Duration> {
        self.left_at(total, Instant::now())
    }

    fn left_at(&self, total: u64, now: Instant) -> Option<Duration> {
        let per_unit = self.per_unit()?;
        let todo = total.saturating_sub(self.done);
        let at_last_finish = per_unit.saturating_mul(u32::try_from(todo).unwrap_or(u32::MAX));
        Some(at_last_finish.saturating_sub(now.saturating_duration_since(self.at)))
    }
}

impl Default for Pace {
    fn default() -> Pace {
        Pace::new()
    }
}

/// The time left when `done` of `total` units took `elapsed` (the rate so far), if any is done.
pub fn eta(elapsed: Duration, done: f64, total: f64) -> Option<Duration> {
    (done > 0.0 && total >= done && elapsed.as_secs_f64().is_finite())
        .then(|| Duration::from_secs_f64(elapsed.as_secs_f64() * (total - done) / done))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_read_as_hours_minutes_seconds() {
        assert_eq!(clock(Duration::from_secs(3)), "3s");
        assert_eq!(clock(Duration::from_secs(123)), "2m03s");
        assert_eq!(clock(Duration::from_secs(3723)), "1h02m03s");
    }

    #[test]
    fn the_pace_counts_down_between_finishes_and_resets_at_each() {
        let t0 = Instant::now();
        let mut pace = Pace::starting(t0);
        assert_eq!(pace.left_at(4, t0), None);
        pace.observe_at(1, t0 + Duration::from_secs(10));
        let at = |s| t0 + Duration::from_secs(s);
        assert_eq!(pace.left_at(4, at(10)), Some(Duration::from_secs(30)));
        assert_eq!(pace.left_at(4, at(25)), Some(Duration::from_secs(15)));
        assert_eq!(pace.left_at(4, at(50)), Some(Duration::ZERO));
        // A second finish at 40 s: 20 s a unit, two to go.
        pace.observe_at(2, at(40));
        assert_eq!(pace.left_at(4, at(40)), Some(Duration::from_secs(40)));
        pace.observe_at(2, at(45));
        assert_eq!(pace.left_at(4, at(45)), Some(Duration::from_secs(35)));
    }

    #[test]
    fn a_plain_line_has_the_percentage_and_no_escape_codes() {
        let shown = Shown {
            text: "best 1.5".into(),
            gauge: Some(Box::new(|| Gauge {
                fraction: Some(0.25),
                left: Some(Duration::from_secs(90)),
                figures: "3/12 task runs".into(),
            })),
        };
        let line = plain(shown.render());
        assert_eq!(line, "25% · 1m30s left · 3/12 task runs · best 1.5");
        assert!(!line.contains('\x1b'));
    }

    #[test]
    fn the_eta_extrapolates_the_rate_so_far() {
        let eta = eta(Duration::from_secs(10), 1.0, 4.0).unwrap();
        assert_eq!(eta, Duration::from_secs(30));
        assert_eq!(super::eta(Duration::from_secs(10), 0.0, 4.0), None);
        assert_eq!(
            super::eta(Duration::from_secs(10), 4.0, 4.0),
            Some(Duration::ZERO)
        );
    }
}
