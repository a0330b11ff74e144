//! The `milo` binary: see `milo --help`.

fn main() {
    std::process::exit(milo::cli::run());
}
