//! The live status line of the long commands (`optimize`, `evolve`, `bench`, `campaign`): on a
//! terminal, one line redrawn in place (indicatif); otherwise one plain line on standard error
//! at a steady interval, so the log of a batch job stays short. Detail lines go above it.
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

/// What the line shows: a text, and, with a deadline, the time left before it (computed when
/// the line is drawn, so it keeps counting between updates).
#[derive(Default)]
struct Shown {
    text: String,
    deadline: Option<Instant>,
}

impl Shown {
    fn render(&self) -> String {
        match self.deadline {
            Some(deadline) => {
                let left = deadline.saturating_duration_since(Instant::now());
                format!("{} left · {}", clock(left), self.text)
            }
            None => self.text.clone(),
        }
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
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {elapsed} {wide_msg}")
                    .expect("valid template"),
            );
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        });
        // On a terminal the ticker redraws the line every second; otherwise it prints it once
        // per interval.
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
                    let line = shown.lock().map(|s| s.render()).unwrap_or_default();
                    match &bar {
                        Some(bar) => bar.set_message(line),
                        None if !line.is_empty() => {
                            eprintln!("{name} [{}] {line}", clock(started.elapsed()))
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
                bar.set_message(shown.render());
            }
        }
    }

    /// Shows the time left before `deadline` at the head of the line.
    pub fn set_deadline(&self, deadline: Instant) {
        if let Ok(mut shown) = self.shown.lock() {
            shown.deadline = Some(deadline);
        }
    }

    /// Prints a detail line on standard error above the status line.
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None if self.hidden => {}
            None => eprintln!("{line}"),
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
