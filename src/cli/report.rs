//! `milo report`: an HTML page with figures and tables for a search run or a benchmark.

use crate::error::{Result, EXIT_OK};
use crate::report::write_report;
use std::path::PathBuf;

/// Examples in `milo report --help`.
pub const EXAMPLES: &str = "Examples:
  milo report runs/third-hour                 # writes runs/third-hour/report/index.html
  milo report runs/bench-default --out site/bench";

/// Arguments of `milo report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// A run directory (with lineage.jsonl), a campaign directory (with campaign.json) or a
    /// benchmark directory (with results.json).
    dir: PathBuf,
    /// Where to write index.html and the figures (default: DIR/report).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// Runs `milo report`.
pub fn run(args: &ReportArgs) -> Result<i32> {
    let out = args.out.clone().unwrap_or_else(|| args.dir.join("report"));
    let index = write_report(&args.dir, &out)?;
    out!("report: {}", index.display())?;
    Ok(EXIT_OK)
}
