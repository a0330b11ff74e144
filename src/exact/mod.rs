//! Exact arithmetic: float64 arrays as dyadic integers and their exact convolution.

pub mod convolution;
pub mod dyadic;
mod ntt;
