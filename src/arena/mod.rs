//! EinsteinArena: a client of the platform's API, `milo arena pull` (save a live leaderboard as
//! construction files with provenance, each re-verified exactly) and `milo arena submit` (check a
//! construction against the live rules, send it, follow it in a ledger).
//!
//! - [`client`]: the public GET requests (timeouts, error statuses) and the JSON shapes they return;
//! - [`send`]: the requests that carry the API key (inline and blob submissions, HTTP 429);
//! - [`api_key`]: where the key comes from (it joins the [`crate::secrets`] in use);
//! - [`pull`](mod@pull): saving the entries, re-verifying them, flagging disagreements, installing the
//!   directory only when complete;
//! - [`rules`]: what the arena will do with a submission, decided exactly before sending;
//! - [`ledger`]: the append-only record of submissions and their statuses;
//! - [`submit`](mod@submit): check, send, refresh.

pub mod api_key;
pub mod client;
pub mod ledger;
pub mod pull;
pub mod rules;
pub mod send;
pub mod submit;

pub use api_key::ApiKey;
pub use client::{ArenaClient, ArenaId, ArenaProblem, ArenaSolution, DEFAULT_BASE_URL};
pub use pull::{pull, Flag, Provenance, PullRequest, PullSummary};
