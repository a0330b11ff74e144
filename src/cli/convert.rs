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
    /// Replace OUT if it exists (without it, an existing OUT is refused); only a regular file is
    /// ever replaced, never a directory, symbolic link, FIFO or device.
    #[arg(long)]
    force: bool,
}

/// Runs `milo convert`.
pub fn run(args: &ConvertArgs) -> Result<i32> {
    // A dangling symbolic link exists too: `symlink_metadata`, not `exists`.
    if !args.force && std::fs::symlink_metadata(&args.output).is_ok() {
        return Err(MiloError::Usage(format!(
            "OUT {}: the file exists; choose another or pass --force",
            args.output.display()
        )));
    }
    // Refused before the input is read (standard input is not consumed for nothing).
    crate::atomic_file::check_replaceable(&args.output)?;
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
