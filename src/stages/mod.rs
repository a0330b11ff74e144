//! Optimizer stages that transform a construction directly (no objective): resolution changes,
//! perturbations, symmetrisation. Each is a small pure function of the values (and a seeded RNG).

pub mod perturb;
pub mod resample;
pub mod symmetrize;
