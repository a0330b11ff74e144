//! milo: verify, improve and benchmark constructions for the EinsteinArena problems.
//!
//! Modules, one concept each:
//! - [`problems`]: the four arena problems, one folder each (rules, scores, surrogate, models of
//!   the problem-specific stages) beside their data files;
//! - [`construction`]: reading and writing construction files;
//! - [`atomic_file`]: every file milo rewrites is replaced atomically (temporary sibling, sync,
//!   rename);
//! - [`bounded_read`]: every file milo reads is read under a size cap (gunzipped size included);
//! - [`arena`]: the EinsteinArena client: `pull` (saved, re-verified leaderboards), `submit`
//!   (exact pre-checks against the live rules, inline or blob, a ledger), `status`;
//! - [`dir_lock`]: one process at a time on a run or benchmark directory (`milo.lock`);
//! - [`cancel`]: the cancellation token passed to searches, executors and budgets;
//! - [`secrets`]: the keys in use, and the one scrubber every server's or model's text passes
//!   before it is stored, printed or rendered;
//! - [`subprocess`]: other programs run in their own process group under wall, CPU and memory
//!   limits, output captured, the whole group killed at the end;
//! - [`threads`]: independent work spread over a fixed number of threads (one pool builder);
//! - [`tally`]: live counts shared between threads (evaluations spent, task runs finished);
//! - [`fast`]: float64 FFT convolution with an a-priori error bound;
//! - [`exact`]: exact integer and rational arithmetic (dyadic integers, NTT convolution);
//! - [`program`]: optimizer programs as data (TOML steps and control flow) and the edits on them;
//! - [`records`]: append-only JSON-lines record files (lineages, benchmark steps);
//! - [`runner`]: executes a program on a construction under a budget, with a trace, and reads
//!   evidence off the trace;
//! - [`stages`]: the optimizer stages behind the [`stages::Stage`] trait, one file each
//!   (parameters and implementation);
//! - [`verify`]: validity, fast and exact scores, and comparison against a rival;
//! - [`objective`]: the machinery of the smooth surrogates (exact gradients through FFT adjoints);
//! - [`optimize`]: parameterisations, L-BFGS under a budget, and β cascades, on any objective closure;
//! - [`harness`]: the policy of the optimizer-writing agent (TOML);
//! - [`llm`]: language-model backends (OpenAI-compatible endpoints, coding CLIs) and their pools;
//! - [`agent`]: agents that write and run optimizer programs under a harness;
//! - [`executor`]: where attempts run: serialisable attempt tasks and results, local threads;
//! - [`suite`]: task suites (pinned starts × parent programs × seeds, search/validation split);
//! - [`search`]: the MILO search over harnesses (paired or raced admission, parent selection…);
//! - [`bench`](mod@bench): benchmarks of search strategies (results, verdicts, ladder);
//! - [`campaign`]: from a live leaderboard to a verified submission (pull, freeze, search, offer);
//! - [`report`]: HTML reports with figures of a search run, a campaign or a benchmark;
//! - [`cli`]: the `milo` command line;
//! - [`say`]: lines on standard error that never panic (a full standard error drops them).

// First, so that its `say!` is in scope in every module below.
#[macro_use]
pub mod say;

pub mod agent;
pub mod arena;
pub mod atomic_file;
pub mod bench;
pub mod bounded_read;
pub mod bounds;
pub mod campaign;
pub mod cancel;
pub mod cli;
pub mod construction;
pub mod dir_lock;
pub mod error;
pub mod exact;
pub mod executor;
pub mod fast;
pub mod harness;
pub mod llm;
pub mod objective;
pub mod optimize;
pub mod problems;
pub mod program;
pub mod records;
pub mod report;
pub mod retry_after;
pub mod runner;
pub mod sandbox;
pub mod search;
pub mod secrets;
pub mod stages;
pub mod subprocess;
pub mod suite;
pub mod tally;
pub mod threads;
pub mod verify;
