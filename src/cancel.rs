//! Cancellation passed in, not a global: a [`CancelToken`] is created by whoever starts the work
//! (the command line, a test), handed to the search, the executor and every budget, and cancelled
//! once (e.g. by a Ctrl-C handler); everything holding a clone of it then winds down.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// A shared, cloneable cancellation flag: all clones see [`CancelToken::cancel`].
#[derive(Clone, Debug, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A token not yet cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels the work holding this token (or a clone). Safe to call from a signal handler thread.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether [`CancelToken::cancel`] has been called on this token or a clone.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// Cancels this token at `at` unless the returned [`Deadline`] is dropped first (a wall-clock
    /// limit on the work holding the token: `--hours`).
    pub fn cancel_at(&self, at: Instant) -> Deadline {
        let (disarm, disarmed) = mpsc::channel::<()>();
        let token = self.clone();
        let thread = std::thread::spawn(move || {
            let left = at.saturating_duration_since(Instant::now());
            if let Err(RecvTimeoutError::Timeout) = disarmed.recv_timeout(left) {
                token.cancel();
            }
        });
        Deadline {
            disarm: Some(disarm),
            thread: Some(thread),
        }
    }
}

/// A pending [`CancelToken::cancel_at`]; dropping it disarms it (the token is not cancelled
/// afterwards by it: its thread is joined).
pub struct Deadline {
    disarm: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Deadline {
    fn drop(&mut self) {
        drop(self.disarm.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn clones_share_the_flag_and_fresh_tokens_do_not() {
        let token = CancelToken::new();
        let clone = token.clone();
        assert!(!clone.is_cancelled());
        token.cancel();
        assert!(clone.is_cancelled());
        assert!(!CancelToken::new().is_cancelled());
    }

    #[test]
    fn a_deadline_cancels_when_it_passes_and_never_once_dropped() {
        let token = CancelToken::new();
        let _deadline = token.cancel_at(Instant::now() + Duration::from_millis(20));
        let waited = Instant::now();
        while !token.is_cancelled() && waited.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(token.is_cancelled());

        let token = CancelToken::new();
        drop(token.cancel_at(Instant::now() + Duration::from_secs(30)));
        // Dropping joined the deadline's thread: nothing can cancel the token any more.
        assert!(!token.is_cancelled());
    }
}
