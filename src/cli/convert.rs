//! `milo convert IN OUT`: a construction from one file format to another, bit for bit.

use crate::construction::{read_values, write_values, Format};
use crate::error::{MiloError, Result, EXIT_OK};
use std::path::PathBuf;

/// Examples in `milo convert --help`.
pub const EXAMPLES: &str = "Examples:
  milo convert best.json best.npy                # for np.load
  milo convert run.npy run.json                  # the arena's {\"values\": [...]}
  milo convert values.txt values.json.gz         # np.savetxt output, gzipped JSON
  python3 make.py | milo convert - start.npy     # from standard input";

/// Arguments of `milo convert`.
#[derive(clap::Args, Debug)]
pub struct ConvertArgs {
    /// The construction to read: JSON, .npy or text, optionally gzipped (the reader is chosen by
    /// content, then by name); `-` reads standard input.
    input: PathBuf,
    /// Where to write it, in the format its name asks for: `.npy` (float64), `.txt` or `.csv`
    /// (one value per line), anything else JSON {"values": [...]}; a further `.gz` gzips it.
    output: PathBuf,
    /// Replace OUT if it exists (without it, an existing OUT is refused).
    #[arg(long)]
    force: bool,
}

/// Runs `milo convert`.
pub fn run(args: &ConvertArgs) -> Result<i32> {
    if !args.force && args.output.exists() {
        return Err(MiloError::Usage(format!(
            "OUT {}: the file exists; choose another or pass --force",
            args.output.display()
        )));
    }
    let values = read_values(&args.input)?;
    write_values(&args.output, &values)?;
    note!(
        "milo: wrote {} values to {} ({})",
        values.len(),
        args.output.display(),
        match Format::of_name(&args.output) {
            Format::Json => "JSON",
            Format::Npy => ".npy float64",
            Format::Text => "text, one value per line",
        }
    );
    Ok(EXIT_OK)
}
