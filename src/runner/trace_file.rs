//! The file `milo optimize --trace` writes: the run's settings (enough to continue it), one
//! record per segment (a first run and each `--resume`), and the [`Trace`] of all of them on one
//! clock.
//!
//! The file and the `--out` construction are rewritten (atomically) while the run goes on, so a
//! run stopped in any way, a kill included, leaves a best construction and a trace that
//! `milo optimize --resume TRACE` continues from. Times and evaluation counts in the merged
//! trace are cumulative over the segments, so a curve drawn from it spans the whole campaign.

use super::trace::{StopReason, Trace};
use crate::bounded_read::{read_json_capped, TRACE_JSON};
use crate::error::Result;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What a run was asked to do: the problem, the program, the start, the seed and the budget.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunHeader {
    /// The problem's slug.
    pub problem: String,
    /// The program's name.
    pub program_name: String,
    /// The program as TOML (it parses back to the program that ran).
    pub program: String,
    /// The start file as given (`-` for standard input).
    pub start: PathBuf,
    /// sha256 of the start's values as little-endian float64 bits (whatever its file format).
    pub start_sha256: String,
    /// The start's length.
    pub start_n: usize,
    /// The start's exact score, 40 significant digits.
    pub start_exact: String,
    /// The best construction's file, relative to the trace file's folder when it can be.
    pub out: PathBuf,
    /// The seed of the first segment; later segments use seeds derived from it.
    pub seed: u64,
    /// Threads for independent restarts.
    pub jobs: usize,
    /// The run's total wall-clock budget over all segments, in seconds.
    pub budget_seconds: Option<f64>,
    /// The run's total evaluation budget over all segments.
    pub budget_evaluations: Option<u64>,
}

/// One continuous stretch of a run: the first, or one `--resume`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    /// The seed this segment ran with.
    pub seed: u64,
    /// Float64 score of the construction it started from.
    pub start_score: f64,
    /// Length of the construction it started from.
    pub start_n: usize,
    /// Wall seconds it ran (so far, while it runs).
    pub seconds: f64,
    /// CPU seconds of the process (all its threads) while it ran.
    pub cpu_seconds: f64,
    /// Objective evaluations it used.
    pub evaluations: u64,
    /// Why it ended; absent while it runs or when it was killed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<StopReason>,
    /// The exact score of the best after it, 40 significant digits; absent until it ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_exact: Option<String>,
}

/// How many of the last bests written to `--out` a trace names (see [`TraceFile::out_sha256`]).
pub const OUT_WRITES_KEPT: usize = 2;

/// The content of a `--trace` file.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TraceFile {
    /// The run's settings; absent in traces written before runs could be resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunHeader>,
    /// The segments, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub segments: Vec<Segment>,
    /// [`values_sha256`] of the last bests written to the run's `--out`, oldest first, at most
    /// [`OUT_WRITES_KEPT`]: the trace is written just before `--out`, so a stop between the two
    /// leaves `--out` holding the one before the newest. A resumed run continues only from an
    /// `--out` holding one of them ([`TraceFile::wrote_out`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub out_sha256: Vec<String>,
    /// Every segment's trace on one clock (seconds and evaluations cumulative).
    #[serde(flatten)]
    pub trace: Trace,
}

impl TraceFile {
    /// Reads a trace file (within [`TRACE_JSON`]).
    pub fn read(path: &Path) -> Result<TraceFile> {
        read_json_capped(path, TRACE_JSON, "milo optimize trace")
    }

    /// Writes it atomically as pretty JSON, gzipped when the name ends in `.gz`.
    pub fn write(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self).expect("traces serialise");
        crate::atomic_file::write_gzipped_if_named(path, text.as_bytes())
    }

    /// Records that the best with `sha256` (of its values) is about to be written to `--out`.
    pub fn writing_out(&mut self, sha256: String) {
        if self.out_sha256.last() != Some(&sha256) {
            self.out_sha256.push(sha256);
        }
        let excess = self.out_sha256.len().saturating_sub(OUT_WRITES_KEPT);
        self.out_sha256.drain(..excess);
    }

    /// Whether the run wrote `values` to its `--out` (as its last best or the one before).
    pub fn wrote_out(&self, values: &[f64]) -> bool {
        self.out_sha256.contains(&values_sha256(values))
    }

    /// Wall seconds and evaluations of the finished segments together.
    pub fn spent(&self) -> (f64, u64) {
        self.segments
            .iter()
            .fold((0.0, 0), |(s, e), g| (s + g.seconds, e + g.evaluations))
    }

    /// This file with `segment` and its `trace` added after the segments before it: the trace's
    /// times and evaluations are shifted by what those had spent.
    pub fn with_segment(&self, segment: Segment, trace: &Trace) -> TraceFile {
        let (seconds, evaluations) = self.spent();
        let mut merged = self.clone();
        merged
            .trace
            .points
            .extend(trace.points.iter().cloned().map(|mut p| {
                p.seconds += seconds;
                p.evaluations += evaluations;
                p
            }));
        merged.trace.stages.extend(trace.stages.iter().cloned());
        merged.trace.stopped = segment.stopped.or(trace.stopped);
        merged.trace.converged_because = trace.converged_because.clone();
        merged.segments.push(segment);
        merged
    }
}

/// sha256 of values as little-endian float64 bits: names a construction whatever its format.
pub fn values_sha256(values: &[f64]) -> String {
    let bytes: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
    crate::suite::sha256_hex(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::TracePoint;

    #[test]
    fn a_trace_past_its_items_is_refused_while_read_never_parsed_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.json");
        // Points as `[seconds, evaluations, score]` arrays: four items each, 2 MB in all.
        let points = crate::bounded_read::TRACE_JSON.items / 4 + 1;
        let text = format!(
            "{{\"points\": [{}[0,0,1]]}}",
            "[0,0,1],".repeat(points as usize)
        );
        std::fs::write(&path, &text).unwrap();
        // Gzipped, the same text is 1,000 times smaller: the caps count what it unpacks to.
        let gzipped = dir.path().join("trace.json.gz");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, text.as_bytes()).unwrap();
        std::fs::write(&gzipped, gz.finish().unwrap()).unwrap();
        for path in [path, gzipped] {
            let err = TraceFile::read(&path).unwrap_err();
            assert_eq!(err.exit_code(), crate::error::EXIT_INPUT);
            assert!(
                err.to_string().contains(
                    "milo optimize trace is past its cap of 1048576 items (array values and object entries)"
                ),
                "{err}"
            );
        }
    }

    #[test]
    fn a_trace_named_gz_is_written_gzipped_and_reads_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let file = TraceFile::default().with_segment(
            segment(3.0, 30),
            &Trace {
                points: vec![point(1.0, 5, 1.9)],
                ..Trace::default()
            },
        );
        let (plain, gzipped) = (
            dir.path().join("run.trace.json"),
            dir.path().join("run.trace.json.gz"),
        );
        file.write(&plain).unwrap();
        file.write(&gzipped).unwrap();
        let bytes = std::fs::read(&gzipped).unwrap();
        assert!(bytes.starts_with(crate::bounded_read::GZIP_MAGIC));
        assert!(!std::fs::read(&plain)
            .unwrap()
            .starts_with(crate::bounded_read::GZIP_MAGIC));
        let (a, b) = (
            TraceFile::read(&plain).unwrap(),
            TraceFile::read(&gzipped).unwrap(),
        );
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&b).unwrap()
        );
        assert_eq!(b.spent(), (3.0, 30));
    }

    fn point(seconds: f64, evaluations: u64, score: f64) -> TracePoint {
        TracePoint {
            seconds,
            evaluations,
            score,
            n: Some(10),
        }
    }

    fn segment(seconds: f64, evaluations: u64) -> Segment {
        Segment {
            seed: 1,
            start_score: 2.0,
            start_n: 10,
            seconds,
            cpu_seconds: seconds,
            evaluations,
            stopped: Some(StopReason::Deadline),
            best_exact: None,
        }
    }

    #[test]
    fn a_second_segment_continues_the_clock_and_the_evaluation_count_of_the_first() {
        let first = Trace {
            points: vec![point(1.0, 5, 1.9)],
            ..Trace::default()
        };
        let file = TraceFile::default().with_segment(segment(10.0, 50), &first);
        let second = Trace {
            points: vec![point(2.0, 7, 1.8)],
            stopped: Some(StopReason::Converged),
            ..Trace::default()
        };
        let mut next = segment(4.0, 9);
        next.stopped = None;
        let file = file.with_segment(next, &second);
        assert_eq!(file.spent(), (14.0, 59));
        let times: Vec<_> = file
            .trace
            .points
            .iter()
            .map(|p| (p.seconds, p.evaluations))
            .collect();
        assert_eq!(times, vec![(1.0, 5), (12.0, 57)]);
        assert_eq!(file.trace.stopped, Some(StopReason::Converged));
    }

    #[test]
    fn a_trace_written_before_runs_could_be_resumed_still_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.json");
        std::fs::write(
            &path,
            r#"{"points":[{"seconds":1.0,"evaluations":3,"score":1.5}],"stages":[],"stopped":"converged"}"#,
        )
        .unwrap();
        let file = TraceFile::read(&path).unwrap();
        assert!(file.run.is_none());
        assert_eq!(file.trace.points[0].n, None);
        assert_eq!(file.spent(), (0.0, 0));
    }
}
