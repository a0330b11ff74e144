//! A campaign's page: what was pulled, what was offered and sent and what the arena said, then
//! the search run's page (`run/`).

use super::html::Page;
use super::run::run_page;
use crate::arena::ledger::{read, tracked};
use crate::arena::pull::SUMMARY_FILE;
use crate::bounded_read::{read_bytes_capped, RECORDS_CAP};
use crate::campaign::{read_settings, LEDGER_FILE, PULL_DIR, RUN_DIR};
use crate::error::{MiloError, Result};
use std::path::Path;

/// The page of the campaign in `dir`, figures written into `out`.
pub fn campaign_page(dir: &Path, out: &Path) -> Result<Page> {
    let settings = read_settings(dir)?;
    let mut campaign = Page::new(&format!("milo campaign report: {}", dir.display()));
    campaign.heading("Campaign");
    campaign.facts(&[
        ("problem", settings.slug.clone()),
        ("arena", settings.base_url.clone()),
        (
            "agent",
            settings.agent.clone().unwrap_or_else(|| "—".into()),
        ),
        ("started", settings.started_at.clone()),
        (
            "submitting",
            if settings.submit {
                "on"
            } else {
                "off (report only)"
            }
            .into(),
        ),
    ]);
    campaign.heading("Pulled leaderboard (the starts)");
    let pull_path = dir.join(PULL_DIR).join(SUMMARY_FILE);
    let pulled: serde_json::Value =
        serde_json::from_slice(&read_bytes_capped(&pull_path, RECORDS_CAP, "pull summary")?)
            .map_err(|e| MiloError::Malformed {
                path: pull_path.clone(),
                message: e.to_string(),
            })?;
    let rows: Vec<(bool, Vec<String>)> = pulled["entries"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    let text = |k: &str| match &e[k] {
                        serde_json::Value::String(s) => s.clone(),
                        serde_json::Value::Null => "—".into(),
                        other => other.to_string(),
                    };
                    (
                        false,
                        vec![
                            text("rank"),
                            text("agent"),
                            text("arena_score"),
                            text("score_exact"),
                            text("valid"),
                        ],
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    campaign.table(
        &["rank", "agent", "arena score", "our exact score", "valid"],
        &rows,
    );
    campaign.heading("Submissions");
    let submissions = tracked(&read(&dir.join(LEDGER_FILE))?);
    if submissions.is_empty() {
        campaign.note("nothing was sent (no new #1, or submitting was off)");
    } else {
        let rows: Vec<(bool, Vec<String>)> = submissions
            .iter()
            .map(|t| {
                let s = &t.submission;
                let status = t.status().unwrap_or("unknown").to_string();
                (
                    status == "evaluated",
                    vec![
                        s.solution_id
                            .as_ref()
                            .map(|i| i.to_string())
                            .unwrap_or_default(),
                        s.at.clone(),
                        s.assessment.score_exact.clone(),
                        s.assessment.verdict.describe(),
                        status,
                        t.latest
                            .as_ref()
                            .and_then(|l| l.score)
                            .map_or("—".into(), |x| format!("{x:?}")),
                    ],
                )
            })
            .collect();
        campaign.table(
            &[
                "id",
                "sent",
                "our exact score",
                "checked verdict",
                "arena status",
                "arena score",
            ],
            &rows,
        );
    }
    let run = run_page(&dir.join(RUN_DIR), out)?;
    campaign.append(run);
    Ok(campaign)
}
