//! The executor of this process: attempts run on `jobs` threads ([`map_on_threads`]), sequentially for one.

use super::{solve, AttemptTask, Executor};
use crate::agent::{writer_by_name, Attempt, OptimizerWriter};
use crate::cancel::CancelToken;
use crate::error::Result;
use crate::tally::Tally;
use crate::threads::map_on_threads;
use std::sync::Arc;

/// Runs attempts in this process on a pool of `jobs` threads.
pub struct LocalThreads {
    jobs: usize,
    writers: Vec<Arc<dyn OptimizerWriter>>,
}

impl LocalThreads {
    /// An executor with `jobs` threads (at least 1) and the writers of the registry (an LLM
    /// writer built from each task's agents file).
    pub fn new(jobs: usize) -> LocalThreads {
        LocalThreads {
            jobs: jobs.max(1),
            writers: Vec::new(),
        }
    }

    /// This executor, also knowing `writer` by its name (found before the built-in writers):
    /// how a test or an embedding program runs a writer the registry does not hold.
    #[must_use]
    pub fn with_writer(mut self, writer: Arc<dyn OptimizerWriter>) -> LocalThreads {
        self.writers.push(writer);
        self
    }

    fn run_one(&self, task: &AttemptTask, cancel: &CancelToken) -> Result<Attempt> {
        match self.writers.iter().find(|w| w.name() == task.writer) {
            Some(writer) => solve(writer.as_ref(), task, cancel),
            None => solve(
                writer_by_name(&task.writer, task.agents.as_ref())?.as_ref(),
                task,
                cancel,
            ),
        }
    }
}

impl Executor for LocalThreads {
    fn name(&self) -> &str {
        "local-threads"
    }

    fn run(&self, tasks: &[AttemptTask], cancel: &CancelToken) -> Result<Vec<Result<Attempt>>> {
        self.run_counted(tasks, cancel, &Tally::default())
    }

    fn run_counted(
        &self,
        tasks: &[AttemptTask],
        cancel: &CancelToken,
        finished: &Tally,
    ) -> Result<Vec<Result<Attempt>>> {
        Ok(map_on_threads(self.jobs, tasks, |t| {
            let attempt = self.run_one(t, cancel);
            finished.add(1);
            attempt
        }))
    }
}
