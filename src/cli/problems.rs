//! `milo problems`: the problems, their thresholds and known records.

use crate::error::Result;
use crate::problems::all;

/// Examples in `milo problems --help`.
pub const EXAMPLES: &str = "Examples:
  milo problems
  milo problems --json | python3 -m json.tool";

/// Arguments of `milo problems`.
#[derive(clap::Args, Debug)]
pub struct ProblemsArgs {
    /// Print the problems' data as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `milo problems`.
pub fn run(args: &ProblemsArgs) -> Result<i32> {
    let problems = all();
    if args.json {
        let specs: Vec<_> = problems.iter().map(|p| p.spec()).collect();
        return super::json_line(&serde_json::json!({ "problems": specs }));
    }
    for p in &problems {
        let spec = p.spec();
        out!("{} — {}", spec.slug, spec.title)?;
        out!(
            "  {:?}; min improvement {:e}; at most {} values",
            spec.direction,
            spec.min_improvement,
            spec.max_len
        )?;
        out!("  score: {}", spec.score)?;
        for r in &spec.records {
            let length = r.length.map(|n| format!(", n = {n}")).unwrap_or_default();
            out!("  record {:<12} {} ({}{length})", r.value, r.holder, r.date)?;
        }
        out!("")?;
    }
    Ok(crate::error::EXIT_OK)
}
