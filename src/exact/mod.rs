//! Exact arithmetic: float64 arrays as dyadic integers and their exact convolution.

pub mod convolution;
pub mod dyadic;
#[cfg(feature = "gmp")]
pub mod gmp;
mod ntt;
pub mod rational;
