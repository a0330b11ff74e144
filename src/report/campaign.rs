//! A campaign's page: what was pulled, what was offered and sent and what the arena said, then
//! the search run's page (`run/`).

use super::html::{Cell, Page};
use super::run::run_page;
use crate::arena::ledger::{read, tracked, unconfirmed};
use crate::arena::pull::SUMMARY_FILE;
use crate::bounded_read::{read_json_capped, SETTINGS_JSON};
use crate::campaign::{read_settings, LEDGER_FILE, PULL_DIR, RUN_DIR};
use crate::error::Result;
use std::path::Path;

/// The page of the campaign in `dir`, figures written into `out`.
pub fn campaign_page(dir: &Path, out: &Path) -> Result<Page> {
    let settings = read_settings(dir)?;
    let mut campaign = Page::new(&format!("milo campaign report: {}", dir.display()));
    campaign.heading("Campaign");
    campaign.facts(vec![
        ("problem", Cell::text(settings.slug.clone())),
        ("arena", Cell::text(settings.base_url.clone())),
        (
            "agent",
            Cell::text(settings.agent.clone().unwrap_or_else(|| "—".into())),
        ),
        ("started", Cell::text(settings.started_at.clone())),
        (
            "submitting",
            Cell::text(if settings.submit {
                "on"
            } else {
                "off (report only)"
            }),
        ),
    ]);
    campaign.heading("Pulled leaderboard (the starts)");
    let pull_path = dir.join(PULL_DIR).join(SUMMARY_FILE);
    let pulled: serde_json::Value = read_json_capped(&pull_path, SETTINGS_JSON, "pull summary")?;
    let rows: Vec<(bool, Vec<Cell>)> = pulled["entries"]
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
                            Cell::text(text("rank")),
                            Cell::text(text("agent")),
                            Cell::text(text("arena_score")),
                            Cell::exact(&text("score_exact")),
                            Cell::text(text("valid")),
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
    let records = read(&dir.join(LEDGER_FILE))?;
    let submissions = tracked(&records);
    let doubtful = unconfirmed(&records);
    for u in &doubtful {
        campaign.note(&format!(
            "unconfirmed: {} (sha256 {}…), sent {} to {}: {}; it may be on the arena \
             (`milo arena status --ledger {}` says what to run)",
            u.file.display(),
            u.sha256.get(..16).unwrap_or(&u.sha256),
            u.at,
            u.base_url,
            u.why,
            dir.join(LEDGER_FILE).display()
        ));
    }
    if submissions.is_empty() && doubtful.is_empty() {
        campaign.note("nothing was sent (no new #1, or submitting was off)");
    } else if !submissions.is_empty() {
        let rows: Vec<(bool, Vec<Cell>)> = submissions
            .iter()
            .map(|t| {
                let s = &t.submission;
                let status = t.status().unwrap_or("unknown").to_string();
                (
                    status == "evaluated",
                    vec![
                        Cell::text(
                            s.solution_id
                                .as_ref()
                                .map(|i| i.to_string())
                                .unwrap_or_default(),
                        ),
                        Cell::text(s.at.clone()),
                        Cell::exact(&s.assessment.score_exact),
                        Cell::text(s.assessment.verdict.describe()),
                        Cell::text(status),
                        Cell::maybe(t.latest.as_ref().and_then(|l| l.score), Cell::score),
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
