//! `milo completions SHELL`: the shell completion script, through `clap_complete`.

use crate::error::{Result, EXIT_OK};
use clap::CommandFactory;
use clap_complete::Shell;
use std::io::Write;
use std::path::Path;

/// Examples in `milo completions --help`.
pub const EXAMPLES: &str = "Examples:
  milo completions bash > ~/.local/share/bash-completion/completions/milo
  milo completions zsh > ~/.zfunc/_milo        # with fpath+=(~/.zfunc) before compinit
  milo completions fish > ~/.config/fish/completions/milo.fish";

/// Arguments of `milo completions`.
#[derive(clap::Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to write the script for.
    #[arg(value_enum)]
    shell: Shell,
}

/// Runs `milo completions`: the script is made in memory, then written to standard output (so a
/// closed or full standard output is reported like any other write).
pub fn run(args: &CompletionsArgs) -> Result<i32> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut super::Cli::command(), "milo", &mut script);
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(&script)
        .and_then(|()| stdout.flush())
        .map_err(crate::error::write_error(Path::new(super::STDOUT)))?;
    Ok(EXIT_OK)
}
