//! The cut at a run's CPU budget: a watchdog thread that cancels the run's token once the process
//! has spent the rest of the budget since it was armed (the step in flight is cut there, as
//! `--hours` cuts it at a deadline), and passes the user's Ctrl-C on to the run's token.

use crate::cancel::CancelToken;
use crate::runner::trace::process_cpu_seconds;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the watchdog looks at the process's CPU time.
const POLL: Duration = Duration::from_millis(10);

/// An armed cut; dropping it disarms it (its thread is joined).
pub struct CpuCut {
    stop: Arc<AtomicBool>,
    reached: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl CpuCut {
    /// Cancels `run` once the process has spent `seconds` more CPU seconds, or as soon as `user`
    /// is cancelled.
    pub fn arm(user: &CancelToken, run: &CancelToken, seconds: f64) -> CpuCut {
        let stop = Arc::new(AtomicBool::new(false));
        let reached = Arc::new(AtomicBool::new(false));
        let (user, run) = (user.clone(), run.clone());
        let (stopped, hit) = (stop.clone(), reached.clone());
        let at = process_cpu_seconds();
        let thread = std::thread::spawn(move || {
            while !stopped.load(Ordering::SeqCst) {
                if user.is_cancelled() {
                    run.cancel();
                    return;
                }
                if process_cpu_seconds() - at >= seconds {
                    hit.store(true, Ordering::SeqCst);
                    run.cancel();
                    return;
                }
                std::thread::sleep(POLL);
            }
        });
        CpuCut {
            stop,
            reached,
            thread: Some(thread),
        }
    }

    /// Whether the budget was reached (and the run's token cancelled for it).
    pub fn reached(&self) -> bool {
        self.reached.load(Ordering::SeqCst)
    }
}

impl Drop for CpuCut {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cut_cancels_the_run_at_the_budget_and_passes_ctrl_c_on() {
        let (user, run) = (CancelToken::new(), CancelToken::new());
        let cut = CpuCut::arm(&user, &run, 0.05);
        let mut x = 0u64;
        while !run.is_cancelled() {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        assert!(cut.reached() && !user.is_cancelled(), "{x}");
        let (user, run) = (CancelToken::new(), CancelToken::new());
        let cut = CpuCut::arm(&user, &run, 1e9);
        user.cancel();
        while !run.is_cancelled() {
            std::thread::sleep(POLL);
        }
        assert!(!cut.reached());
        drop(cut);
        let (user, run) = (CancelToken::new(), CancelToken::new());
        drop(CpuCut::arm(&user, &run, 1e9));
        assert!(!run.is_cancelled(), "a disarmed cut cancels nothing");
    }
}
