//! A weighted pool of backends: each request goes to one member, drawn with its weight from a
//! seeded stream, so a run's choice of model is reproducible.

use super::{ChatBackend, ChatRequest, Completion, LlmError};
use rand::distributions::{Distribution, WeightedIndex};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Backends with weights.
pub struct ModelPool {
    members: Vec<(f64, Box<dyn ChatBackend>)>,
}

impl ModelPool {
    /// A pool of `members` (weight, backend); weights are positive and the pool is not empty
    /// (the agents file is checked on read).
    pub fn new(members: Vec<(f64, Box<dyn ChatBackend>)>) -> ModelPool {
        assert!(!members.is_empty(), "a model pool has at least one member");
        ModelPool { members }
    }

    /// The member drawn for `seed`.
    pub fn pick(&self, seed: u64) -> &dyn ChatBackend {
        if self.members.len() == 1 {
            return self.members[0].1.as_ref();
        }
        let weights =
            WeightedIndex::new(self.members.iter().map(|(w, _)| *w)).expect("positive weights");
        let index = weights.sample(&mut ChaCha8Rng::seed_from_u64(seed));
        self.members[index].1.as_ref()
    }

    /// Asks the member drawn for `seed`.
    pub fn complete(&self, seed: u64, request: &ChatRequest) -> Result<Completion, LlmError> {
        self.pick(seed).complete(request)
    }

    /// The members' names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.members.iter().map(|(_, b)| b.name()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::scripted::ScriptedBackend;

    #[test]
    fn the_draw_follows_the_weights_and_the_seed() {
        let pool = ModelPool::new(vec![
            (1.0, Box::new(ScriptedBackend::new("a", vec![]))),
            (3.0, Box::new(ScriptedBackend::new("b", vec![]))),
        ]);
        let picks: Vec<&str> = (0..400).map(|s| pool.pick(s).name()).collect();
        let b = picks.iter().filter(|n| **n == "b").count();
        assert!((250..350).contains(&b), "{b} of 400 drew b");
        let again: Vec<&str> = (0..400).map(|s| pool.pick(s).name()).collect();
        assert_eq!(picks, again);
    }
}
