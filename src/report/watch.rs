//! `milo report --watch`: the report written again whenever the records it is drawn from
//! change (their size or modification time, looked at every [`POLL`]), until cancelled; the
//! page it writes reloads itself every [`REFRESH_SECONDS`].

use super::report_page;
use crate::bench::{summary_paths, RESULTS_FILE};
use crate::campaign::{CAMPAIGN_FILE, LEDGER_FILE, RUN_DIR};
use crate::cancel::CancelToken;
use crate::error::{MiloError, Result};
use crate::search::evolve::BEST_FILE;
use crate::search::lineage::LINEAGE_FILE;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// How often the watched files are looked at.
pub const POLL: Duration = Duration::from_secs(1);

/// How often a watched page reloads itself.
pub const REFRESH_SECONDS: u32 = 5;

/// What happened on one pass of the watch.
pub enum Watched<'a> {
    /// The page was written (again).
    Written(&'a Path),
    /// The records changed but the page could not be written (the old page stays).
    Failed(&'a MiloError),
}

/// The files a report of `dir` is drawn from (for a benchmark, also the summaries of its runs
/// to come).
fn sources(dir: &Path) -> Vec<PathBuf> {
    if dir.join(CAMPAIGN_FILE).is_file() {
        let run = dir.join(RUN_DIR);
        return vec![
            dir.join(CAMPAIGN_FILE),
            dir.join(LEDGER_FILE),
            run.join(LINEAGE_FILE),
            run.join(BEST_FILE),
        ];
    }
    let mut files = vec![
        dir.join(LINEAGE_FILE),
        dir.join(BEST_FILE),
        dir.join(RESULTS_FILE),
    ];
    files.extend(summary_paths(dir));
    files
}

/// Size and modification time of each source (`None` for one that is absent).
type Fingerprint = Vec<Option<(u64, SystemTime)>>;

fn fingerprint(sources: &[PathBuf]) -> Fingerprint {
    sources
        .iter()
        .map(|path| {
            let meta = std::fs::metadata(path).ok()?;
            Some((meta.len(), meta.modified().ok()?))
        })
        .collect()
}

/// Writes the report of `dir` into `out` (an error if the first page cannot be written), then
/// again whenever its sources change, looking every `poll`, until `cancel` is cancelled;
/// `watched` hears of every pass that wrote or failed.
pub fn watch(
    dir: &Path,
    out: &Path,
    poll: Duration,
    cancel: &CancelToken,
    watched: &mut dyn FnMut(Watched),
) -> Result<()> {
    let mut seen = fingerprint(&sources(dir));
    let index = report_page(dir, out, Some(REFRESH_SECONDS))?;
    watched(Watched::Written(&index));
    while !cancel.is_cancelled() {
        let next = Instant::now() + poll;
        while Instant::now() < next && !cancel.is_cancelled() {
            std::thread::sleep(poll.min(Duration::from_millis(100)));
        }
        // Looked up again each time: a benchmark's finished runs appear as it goes.
        let now = fingerprint(&sources(dir));
        if now == seen || cancel.is_cancelled() {
            continue;
        }
        seen = now;
        match report_page(dir, out, Some(REFRESH_SECONDS)) {
            Ok(index) => watched(Watched::Written(&index)),
            Err(err) => watched(Watched::Failed(&err)),
        }
    }
    Ok(())
}
