//! `milo report`: one self-contained, interactive HTML page (data embedded as JSON, an inline
//! script, no server, no network) with sortable tables and figures for papers (PNG, linking to
//! SVG), for a search run directory (it holds `lineage.jsonl`), a campaign directory, a
//! benchmark directory (it holds `results.json`) or a folder of record campaigns (`milo
//! optimize` traces, `*.trace.json`).
//!
//! One file per kind of figure: [`lineage_tree`], [`progress`] (best so far), [`construction`]
//! (the best construction and its lags), [`bench`](mod@bench) (a benchmark's curves and tables); [`run`]
//! assembles a run's page, [`campaign`](mod@campaign) a campaign's (its pull, its submissions, its
//! run), [`records`] a folder of record campaigns' (best so far over hours, the ladder of n),
//! [`interactive`] the data the page's script draws from, [`html`] writes pages (with
//! [`digits`] for numbers), [`plot`] saves figures, [`watch`] rewrites a page as records arrive.

pub mod bench;
pub mod campaign;
pub mod construction;
pub mod digits;
pub mod html;
pub mod interactive;
pub mod lineage_tree;
pub mod plot;
pub mod progress;
pub mod records;
pub mod run;
pub mod watch;

use crate::bench::{CONFIG_FILE, RESULTS_FILE};
use crate::campaign::CAMPAIGN_FILE;
use crate::error::{write_error, MiloError, Result};
use crate::search::lineage::LINEAGE_FILE;
use std::path::{Path, PathBuf};

/// Name of the page in the output directory.
pub const INDEX_FILE: &str = "index.html";

/// Writes the report of `dir` (a run, campaign or benchmark directory) into `out` and returns the
/// path of its page.
pub fn write_report(dir: &Path, out: &Path) -> Result<PathBuf> {
    report_page(dir, out, None)
}

/// [`write_report`], the page reloading itself every `refresh` seconds when given.
fn report_page(dir: &Path, out: &Path, refresh: Option<u32>) -> Result<PathBuf> {
    if dir.join(CAMPAIGN_FILE).is_file() {
        create_dir(out)?;
        return write_page(out, campaign::campaign_page(dir, out)?, refresh);
    }
    if !dir.is_dir() {
        return Err(MiloError::Usage(format!(
            "{} is not a directory (expected a run directory with {LINEAGE_FILE} or a \
             benchmark directory with {})",
            dir.display(),
            RESULTS_FILE
        )));
    }
    let is_run = dir.join(LINEAGE_FILE).is_file();
    if !is_run && !dir.join(RESULTS_FILE).is_file() && !dir.join(CONFIG_FILE).is_file() {
        if let Some(page) = records::records_page(dir, out)? {
            return write_page(out, page, refresh);
        }
        return Err(MiloError::Usage(format!(
            "{} holds neither {LINEAGE_FILE} (a search run) nor {RESULTS_FILE} or {CONFIG_FILE} \
             (a benchmark) nor milo optimize traces (*{})",
            dir.display(),
            records::TRACE_SUFFIX
        )));
    }
    create_dir(out)?;
    let page = if is_run {
        run::run_page(dir, out)?
    } else {
        bench::bench_page(dir, out)?
    };
    write_page(out, page, refresh)
}

fn create_dir(out: &Path) -> Result<()> {
    std::fs::create_dir_all(out).map_err(write_error(out))
}

/// Writes `page` as `out/index.html` (reloading itself every `refresh` seconds when given);
/// returns its path.
fn write_page(out: &Path, mut page: html::Page, refresh: Option<u32>) -> Result<PathBuf> {
    if let Some(seconds) = refresh {
        page.set_refresh(seconds);
    }
    let index = out.join(INDEX_FILE);
    crate::atomic_file::write(&index, page.render().as_bytes())?;
    Ok(index)
}
