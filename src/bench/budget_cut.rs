//! The cut at a run's CPU budget: a watchdog thread that cancels the run's token once the process
//! has spent the rest of the budget since it was armed, less what the run reserves for its
//! validation (the step in flight is cut there, as `--hours` cuts it at a deadline), and passes
//! the user's Ctrl-C on to the run's token.

use crate::cancel::CancelToken;
use crate::runner::trace::process_cpu_seconds;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the watchdog looks at the process's CPU time.
const POLL: Duration = Duration::from_millis(10);

/// CPU seconds a run keeps back from its budget for the validation it makes after its last step
/// (a baseline validates its best once); the run updates it as its best changes. Clones share it.
#[derive(Clone, Debug, Default)]
pub struct ValidationReserve(Arc<AtomicU64>);

impl ValidationReserve {
    /// Sets the reserve to `seconds`.
    pub fn set(&self, seconds: f64) {
        self.0.store(seconds.max(0.0).to_bits(), Ordering::SeqCst);
    }

    /// The reserve, in CPU seconds (0 until set).
    pub fn seconds(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::SeqCst))
    }
}

/// What the watchdog saves as the run goes, so a run killed outright (SIGKILL, a lost node)
/// still has its CPU counted when it resumes: `save` gets the CPU seconds spent since the cut
/// was armed, every `every` of wall time.
pub struct Checkpoint {
    /// Wall time between saves.
    pub every: Duration,
    /// Saves the CPU seconds spent so far (errors are the saver's to ignore: the run's own
    /// record at its end is the one that must be written).
    pub save: Box<dyn FnMut(f64) + Send>,
}

/// An armed cut; dropping it disarms it (its thread is joined).
pub struct CpuCut {
    stop: Arc<AtomicBool>,
    reached: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl CpuCut {
    /// Cancels `run` once the process has spent `seconds` more CPU seconds less `reserve`, or as
    /// soon as `user` is cancelled; meanwhile saves the CPU spent through `checkpoint`.
    pub fn arm(
        user: &CancelToken,
        run: &CancelToken,
        seconds: f64,
        reserve: &ValidationReserve,
        mut checkpoint: Option<Checkpoint>,
    ) -> CpuCut {
        let stop = Arc::new(AtomicBool::new(false));
        let reached = Arc::new(AtomicBool::new(false));
        let (user, run, reserve) = (user.clone(), run.clone(), reserve.clone());
        let (stopped, hit) = (stop.clone(), reached.clone());
        let at = process_cpu_seconds();
        let thread = std::thread::spawn(move || {
            let mut saved_at = std::time::Instant::now();
            while !stopped.load(Ordering::SeqCst) {
                if let Some(c) = checkpoint
                    .as_mut()
                    .filter(|c| saved_at.elapsed() >= c.every)
                {
                    (c.save)(process_cpu_seconds() - at);
                    saved_at = std::time::Instant::now();
                }
                if user.is_cancelled() {
                    run.cancel();
                    return;
                }
                if process_cpu_seconds() - at >= seconds - reserve.seconds() {
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
        let none = ValidationReserve::default();
        let cut = CpuCut::arm(&user, &run, 0.05, &none, None);
        let mut x = 0u64;
        while !run.is_cancelled() {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        assert!(cut.reached() && !user.is_cancelled(), "{x}");
        let (user, run) = (CancelToken::new(), CancelToken::new());
        let cut = CpuCut::arm(&user, &run, 1e9, &none, None);
        user.cancel();
        while !run.is_cancelled() {
            std::thread::sleep(POLL);
        }
        assert!(!cut.reached());
        drop(cut);
        let (user, run) = (CancelToken::new(), CancelToken::new());
        drop(CpuCut::arm(&user, &run, 1e9, &none, None));
        assert!(!run.is_cancelled(), "a disarmed cut cancels nothing");
    }

    #[test]
    fn the_cpu_spent_is_saved_as_the_run_goes() {
        let (user, run) = (CancelToken::new(), CancelToken::new());
        let saved = Arc::new(std::sync::Mutex::new(Vec::new()));
        let into = saved.clone();
        let checkpoint = Checkpoint {
            every: POLL,
            save: Box::new(move |spent| into.lock().unwrap().push(spent)),
        };
        let cut = CpuCut::arm(
            &user,
            &run,
            0.2,
            &ValidationReserve::default(),
            Some(checkpoint),
        );
        let mut x = 0u64;
        while !run.is_cancelled() {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        drop(cut);
        let saved = saved.lock().unwrap();
        assert!(saved.len() >= 2, "{saved:?} {x}");
        assert!(saved.windows(2).all(|w| w[0] <= w[1]), "{saved:?}");
        assert!(
            saved.last().is_some_and(|&s| s > 0.05 && s < 0.25),
            "{saved:?}"
        );
    }

    #[test]
    fn the_cut_comes_earlier_by_the_reserve_set_while_it_is_armed() {
        let (user, run) = (CancelToken::new(), CancelToken::new());
        let reserve = ValidationReserve::default();
        let cut = CpuCut::arm(&user, &run, 1e9, &reserve, None);
        reserve.set(1e9 - 0.05);
        let mut x = 0u64;
        while !run.is_cancelled() {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        assert!(cut.reached(), "{x}");
        assert_eq!(reserve.seconds(), 1e9 - 0.05);
    }
}
