//! milo: verify, improve and benchmark constructions for the EinsteinArena problems.
//!
//! Modules, one concept each:
//! - [`exact`]: exact integer and rational arithmetic (float64 → dyadic integers, NTT convolution).

pub mod exact;
