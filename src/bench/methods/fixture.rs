//! A tiny third-problem suite for the methods' tests: two search starts and one held-out
//! start, two programs (so tasks differ only in their program), seeds 1 and 2, validation seed 3.

use super::RunContext;
use crate::cancel::CancelToken;
use crate::executor::LocalThreads;
use crate::search::evaluation::{CostMeasure, Quality};
use crate::suite::{sha256_hex, Suite};
use std::path::Path;
use std::sync::Arc;

/// Writes the suite into `dir` and loads it.
pub fn tiny_suite(dir: &Path) -> Suite {
    let mut starts = String::new();
    for (label, phase, split) in [
        ("wave-a", 0.3, "search"),
        ("wave-b", 1.1, "search"),
        ("wave-c", 2.0, "validation"),
    ] {
        let values: Vec<f64> = (0..80)
            .map(|i| {
                let x = (i as f64 + 0.5) / 80.0;
                1.0 + 0.4 * (6.0 * x + phase).sin() - 0.3 * x
            })
            .collect();
        let path = dir.join(format!("{label}.json"));
        std::fs::write(&path, serde_json::json!({ "values": values }).to_string()).unwrap();
        let sha = sha256_hex(&std::fs::read(&path).unwrap());
        starts.push_str(&format!(
            "\n[[starts]]\nlabel = \"{label}\"\npath = \"{label}.json\"\nsha256 = \"{sha}\"\nsplit = \"{split}\"\n"
        ));
    }
    for (name, iterations) in [("polish", 100), ("polish-short", 40)] {
        std::fs::write(
            dir.join(format!("{name}.toml")),
            format!(
                "name = \"{name}\"\n\n[[steps]]\nkind = \"lbfgs\"\nparameterisation = \"raw\"\n\
                 betas = [1e3, 1e5, 1e7]\nhistory = 20\niterations = {iterations}\n\n\
                 [[steps]]\nkind = \"finalize\"\n"
            ),
        )
        .unwrap();
    }
    let text = format!(
        "name = \"tiny\"\nproblem = \"third-autocorrelation-inequality\"\n\
         programs = [\"polish.toml\", \"polish-short.toml\"]\nseeds = [1, 2]\n\
         validation_seeds = [3]\n\n[budget]\nevaluations = 150\n{starts}"
    );
    let path = dir.join("tiny.toml");
    std::fs::write(&path, &text).unwrap();
    Suite::load(&path).unwrap()
}

/// A one-thread run of seed 1 in `dir` with `cpu_seconds` to spend.
pub fn context<'a>(suite: &'a Suite, dir: &'a Path, cpu_seconds: f64) -> RunContext<'a> {
    RunContext {
        suite,
        dir,
        seed: 1,
        cpu_seconds,
        jobs: 1,
        cancel: CancelToken::new(),
        quality: Quality::Best,
        cost: CostMeasure::Counted,
        promote: false,
        executor_name: "local-threads",
        slurm: None,
        executor: Arc::new(LocalThreads::new(1)),
        search: Default::default(),
        budget_spent: false,
        reserve: Default::default(),
    }
}
