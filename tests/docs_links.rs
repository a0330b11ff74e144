//! Every relative link in README.md and docs/ resolves: a Markdown link `[text](path)` to a
//! file or directory of the repository, and every `docs/…` path named in backticks.

use std::path::{Path, PathBuf};

/// README.md and every Markdown file under docs/.
fn markdown_files(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The targets of the Markdown links `[text](target)` in `text` (inline links only).
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        if let Some(end) = rest.find(')') {
            targets.push(rest[..end].trim().to_string());
        }
    }
    targets
}

/// The `docs/…` paths named in backticks in `text` (up to the first space or backtick).
fn docs_paths(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|quoted| quoted.starts_with("docs/") && !quoted.contains([' ', '*', '<', '{']))
        .map(str::to_string)
        .collect()
}

/// Whether `target` is an address outside the repository or an anchor in the same file.
fn external(target: &str) -> bool {
    target.is_empty()
        || target.starts_with('#')
        || target.contains("://")
        || target.starts_with("mailto:")
}

#[test]
fn every_relative_link_in_the_readme_and_docs_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in markdown_files(root) {
        let text = std::fs::read_to_string(&file).unwrap();
        let base = file.parent().unwrap();
        for target in link_targets(&text) {
            if external(&target) {
                continue;
            }
            let path = target.split('#').next().unwrap();
            checked += 1;
            if !base.join(path).exists() {
                broken.push(format!("{}: ({target})", file.display()));
            }
        }
        for path in docs_paths(&text) {
            checked += 1;
            if !root.join(&path).exists() {
                broken.push(format!("{}: `{path}`", file.display()));
            }
        }
    }
    assert!(
        checked > 10,
        "only {checked} links found: is the parser right?"
    );
    assert!(
        broken.is_empty(),
        "links that do not resolve:\n{}",
        broken.join("\n")
    );
}
