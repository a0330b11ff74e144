//! Cancellation passed in, not a global: a [`CancelToken`] is created by whoever starts the work
//! (the command line, a test), handed to the search, the executor and every budget, and cancelled
//! once (e.g. by a Ctrl-C handler); everything holding a clone of it then winds down.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often a wait or an abandonable piece of work looks at its token.
const POLL: Duration = Duration::from_millis(50);

/// Why [`CancelToken::run_until`] stopped waiting for its work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Abandoned {
    /// The token was cancelled.
    Cancelled,
    /// The deadline passed.
    Deadline,
}

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

    /// Sleeps for `duration` unless the token is cancelled first (then it returns within
    /// [`POLL`]); whether it slept the whole time.
    pub fn wait(&self, duration: Duration) -> bool {
        let until = Instant::now() + duration;
        loop {
            if self.is_cancelled() {
                return false;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            std::thread::sleep(left.min(POLL));
        }
    }

    /// Runs `work` on a thread of its own and waits for its result, but no longer than until the
    /// token is cancelled or `deadline` (if any) passes: then the work is abandoned (left to end
    /// on its own, its result dropped) and the reason returned, within [`POLL`]. For blocking
    /// calls that cannot be interrupted, such as an HTTP request in flight.
    pub fn run_until<T: Send + 'static>(
        &self,
        deadline: Option<Instant>,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, Abandoned> {
        if self.is_cancelled() {
            return Err(Abandoned::Cancelled);
        }
        let (done, result) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = done.send(work());
        });
        loop {
            if self.is_cancelled() {
                return Err(Abandoned::Cancelled);
            }
            let mut poll = POLL;
            if let Some(deadline) = deadline {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(Abandoned::Deadline);
                }
                poll = poll.min(left);
            }
            match result.recv_timeout(poll) {
                Ok(value) => return Ok(value),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => panic!("abandonable work panicked"),
            }
        }
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

    #[test]
    fn a_wait_and_abandonable_work_end_soon_after_a_cancel() {
        let token = CancelToken::new();
        assert!(token.wait(Duration::from_millis(5)));
        assert_eq!(token.run_until(None, || 7), Ok(7));
        let never = Instant::now() + Duration::from_secs(3600);
        let (_hold, blocked) = mpsc::channel::<()>();
        let waited = Instant::now();
        let deadline = Some(Instant::now() + Duration::from_millis(100));
        let result = token.run_until(deadline, move || blocked.recv());
        assert_eq!(result, Err(Abandoned::Deadline));
        let canceller = token.clone();
        let _deadline = canceller.cancel_at(Instant::now() + Duration::from_millis(100));
        let (_hold, blocked) = mpsc::channel::<()>();
        assert_eq!(
            token.run_until(Some(never), move || blocked.recv()),
            Err(Abandoned::Cancelled)
        );
        assert!(!token.wait(Duration::from_secs(3600)));
        assert!(
            waited.elapsed() < Duration::from_secs(10),
            "{:?}",
            waited.elapsed()
        );
    }
}
