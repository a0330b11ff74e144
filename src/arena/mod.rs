//! EinsteinArena: a small client of the platform's public API and `milo arena pull`, which saves a
//! problem's live leaderboard as construction files with provenance, each re-verified exactly.
//!
//! - [`client`]: the HTTP requests (timeouts, error statuses) and the JSON shapes they return;
//! - [`pull`](mod@pull): saving the entries, re-verifying them, flagging disagreements, installing the
//!   directory only when complete.

pub mod client;
pub mod pull;

pub use client::{ArenaClient, ArenaId, ArenaProblem, ArenaSolution, DEFAULT_BASE_URL};
pub use pull::{pull, Flag, Provenance, PullRequest, PullSummary};
