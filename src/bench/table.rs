//! The benchmark's tables: `results.md` (methods, verdicts, ladder, validation apart from
//! search) and the CSV files `methods.csv` and `runs.csv`.

use super::results::{BenchResults, Interval, TransferLevel};
use std::fmt::Write;

/// A score as printed in the tables.
pub fn score(x: f64) -> String {
    format!("{x:.10}")
}

/// A quality (gain in units of `min_improvement`) as printed.
pub fn quality(x: f64) -> String {
    format!("{x:.3}")
}

/// A spread of scores (a null band or an advantage) as printed.
pub fn spread(x: f64) -> String {
    format!("{x:.3e}")
}

fn ci(i: &Interval, format: fn(f64) -> String) -> String {
    format!("{} [{}, {}]", format(i.mean), format(i.low), format(i.high))
}

fn optional(i: &Option<Interval>, format: fn(f64) -> String) -> String {
    i.as_ref().map_or("–".into(), |i| ci(i, format))
}

/// The Markdown report.
pub fn markdown(results: &BenchResults) -> String {
    let mut out = String::new();
    let runs = |m: &str| results.runs.iter().filter(|r| r.method == m).count();
    let _ = writeln!(
        out,
        "# Benchmark: {} ({})\n\nSuite `{}`; {} CPU seconds per run. Scores are read at the budget: \
         the best exactly verified score on the search tasks among the evaluations that ended \
         within it (mean and 95% interval over seeds); quality is the best such candidate's gain \
         in units of the problem's minimum improvement.\n",
        results.problem, results.direction, results.suite, results.cpu_seconds
    );
    let _ = writeln!(out, "## Search tasks\n");
    let _ = writeln!(
        out,
        "| method | runs | best score | quality | null band | re-run best score | re-run null band |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for m in &results.methods {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            m.method,
            runs(&m.method),
            ci(&m.best, score),
            ci(&m.quality, quality),
            spread(m.null_band),
            optional(&m.rerun_best, score),
            m.rerun_null_band.map_or("–".into(), spread),
        );
    }
    let _ = writeln!(
        out,
        "\n## Budgets\n\nCPU seconds each run took in the benchmark's process (search, validation, \
         re-scoring, parents' re-runs), against its budget of {} s.\n",
        results.cpu_seconds
    );
    let _ = writeln!(out, "| method | runs | spent / budget: mean | min | max |");
    let _ = writeln!(out, "|---|---|---|---|---|");
    for m in &results.methods {
        let ratios: Vec<f64> = results
            .runs
            .iter()
            .filter(|r| r.method == m.method)
            .filter_map(|r| r.process_cpu_seconds)
            .map(|spent| spent / results.cpu_seconds)
            .collect();
        if ratios.is_empty() {
            let _ = writeln!(out, "| {} | 0 | – | – | – |", m.method);
            continue;
        }
        let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
        let (min, max) = ratios
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &r| {
                (lo.min(r), hi.max(r))
            });
        let _ = writeln!(
            out,
            "| {} | {} | {mean:.2} | {min:.2} | {max:.2} |",
            m.method,
            ratios.len()
        );
    }
    if !results.transfers.is_empty() {
        let _ = writeln!(
            out,
            "\n## Transfer\n\nA harness or a program from another run, frozen. Level: how far this \
             suite is from the suite it was evolved on (its held-out starts are the validation \
             tasks below).\n"
        );
        let _ = writeln!(out, "| method | source | source suite | level |");
        let _ = writeln!(out, "|---|---|---|---|");
        for t in &results.transfers {
            let _ = writeln!(
                out,
                "| {} | `{}` | {} | {} |",
                t.method,
                t.source.display(),
                t.source_suite
                    .as_ref()
                    .map_or("unknown".into(), |s| format!("`{}`", s.display())),
                t.level.map_or("unknown", TransferLevel::describe)
            );
        }
    }
    let _ = writeln!(out, "\n## Validation tasks (held out)\n");
    let _ = writeln!(out, "| method | best score | quality |");
    let _ = writeln!(out, "|---|---|---|");
    for m in &results.methods {
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            m.method,
            optional(&m.validation_best, score),
            optional(&m.validation_quality, quality),
        );
    }
    let _ = writeln!(
        out,
        "\n## Verdicts\n\nA difference counts when it clears both methods' null bands and the \
         problem's minimum improvement in the first batch and again, with the same sign, in the \
         re-run with fresh seeds.\n"
    );
    let _ = writeln!(
        out,
        "| a | b | advantage of a | null band | re-run advantage | re-run null band | verdict |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for v in &results.verdicts {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            v.a,
            v.b,
            spread(v.advantage),
            spread(v.null_band),
            v.rerun_advantage.map_or("–".into(), spread),
            v.rerun_null_band.map_or("–".into(), spread),
            v.verdict
        );
    }
    let _ = writeln!(out, "\n## Ladder (best first)\n");
    let _ = writeln!(out, "| rung | score |");
    let _ = writeln!(out, "|---|---|");
    for rung in &results.ladder {
        let label = if rung.method {
            format!("**{}**", rung.label)
        } else {
            rung.label.clone()
        };
        let _ = writeln!(out, "| {label} | {} |", score(rung.value));
    }
    out
}

/// `methods.csv`: one row per method.
pub fn methods_csv(results: &BenchResults) -> String {
    let mut out = String::from(
        "method,best_mean,best_low,best_high,quality_mean,quality_low,quality_high,null_band,\
         rerun_best_mean,rerun_null_band,validation_best_mean,validation_quality_mean\n",
    );
    let opt = |x: Option<f64>| x.map_or(String::new(), |x| format!("{x:e}"));
    for m in &results.methods {
        let _ = writeln!(
            out,
            "{},{:e},{:e},{:e},{:e},{:e},{:e},{:e},{},{},{},{}",
            m.method,
            m.best.mean,
            m.best.low,
            m.best.high,
            m.quality.mean,
            m.quality.low,
            m.quality.high,
            m.null_band,
            opt(m.rerun_best.map(|i| i.mean)),
            opt(m.rerun_null_band),
            opt(m.validation_best.map(|i| i.mean)),
            opt(m.validation_quality.map(|i| i.mean)),
        );
    }
    out
}

/// `runs.csv`: one row per run.
pub fn runs_csv(results: &BenchResults) -> String {
    let mut out = String::from(
        "method,batch,seed,cpu_seconds,process_cpu_seconds,wall_seconds,steps,counted_steps,\
         best_exact,quality,validation_best_exact,validation_quality\n",
    );
    for r in &results.runs {
        let _ = writeln!(
            out,
            "{},{},{},{:.3},{},{:.3},{},{},{},{},{},{}",
            r.method,
            r.batch.as_str(),
            r.seed,
            r.cpu_seconds,
            r.process_cpu_seconds
                .map_or(String::new(), |s| format!("{s:.3}")),
            r.wall_seconds,
            r.steps,
            r.counted_steps,
            r.best_exact,
            r.quality,
            r.validation_best_exact.clone().unwrap_or_default(),
            r.validation_quality
                .map_or(String::new(), |q| q.to_string()),
        );
    }
    out
}
