//! `milo report`: an HTML page with figures and tables for a search run or a benchmark; with
//! `--watch`, rewritten as records arrive until Ctrl-C.

use crate::error::{Result, EXIT_OK};
use crate::report::watch::{watch, Watched, POLL};
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
    /// Keep the page up to date: write it again whenever the records change (the page reloads
    /// itself every few seconds) until Ctrl-C.
    #[arg(long)]
    watch: bool,
}

/// Runs `milo report`.
pub fn run(args: &ReportArgs) -> Result<i32> {
    let out = args.out.clone().unwrap_or_else(|| args.dir.join("report"));
    if !args.watch {
        let index = write_report(&args.dir, &out)?;
        out!("report: {}", index.display())?;
        return Ok(EXIT_OK);
    }
    let cancel = super::cancel_on_ctrl_c();
    let mut first = true;
    let mut printed = Ok(());
    watch(&args.dir, &out, POLL, &cancel, &mut |event| match event {
        Watched::Written(index) if first => {
            first = false;
            printed = out!(
                "report: {} (rewritten as records arrive; Ctrl-C stops)",
                index.display()
            );
        }
        Watched::Written(index) => say!("milo report: rewrote {}", index.display()),
        Watched::Failed(err) => say!("milo report: the page was not rewritten: {err}"),
    })?;
    printed?;
    say!("milo report: stopped watching");
    Ok(EXIT_OK)
}
