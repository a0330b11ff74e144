//! A program's numeric parameters by path (`steps[2].betas`, `steps[0].body[1].iterations`):
//! which there are, how a tuning edit may move each ([`TuneRange`]), and the upper bound every
//! count must respect, checked when a program is read, so that no program (written by hand or
//! evolved by tuning) can ask for unbounded work or memory.

use super::{Program, Step};
use crate::stages::TuneRange;

/// Checks every count of `program` against its upper bound; the message names the path, the
/// bound and the value.
pub(crate) fn check_bounds(program: &Program) -> Result<(), String> {
    let tree = toml::Value::try_from(program).map_err(|e| e.to_string())?;
    let mut leaves = Vec::new();
    collect_numbers(&tree, String::new(), &mut leaves);
    for path in leaves {
        if let (Some(TuneRange::Count(max)), Some(toml::Value::Integer(k))) =
            (tune_range(program, &path), leaf(&tree, &path))
        {
            if *k as u64 > max {
                return Err(format!("{path}: must be at most {max}, got {k}"));
            }
        }
    }
    Ok(())
}

/// The value at a parameter's path.
fn leaf<'a>(tree: &'a toml::Value, path: &str) -> Option<&'a toml::Value> {
    let mut node = tree;
    for part in path.split('.') {
        let (key, indices) = match part.find('[') {
            Some(at) => (&part[..at], &part[at..]),
            None => (part, ""),
        };
        node = node.get(key)?;
        for index in indices.split(['[', ']']).filter(|s| !s.is_empty()) {
            node = node.get(index.parse::<usize>().ok()?)?;
        }
    }
    Some(node)
}

/// How the step at a parameter's path (`steps[0].body[1].inner.betas`) lets a tuning edit move
/// that parameter, or `None` if it is not tunable.
pub(crate) fn tune_range(program: &Program, path: &str) -> Option<TuneRange> {
    let mut steps: &[Step] = &program.steps;
    let mut rest = path;
    loop {
        let (head, tail) = rest.split_once('.')?;
        let (key, index) = head.split_once('[')?;
        if key != "steps" && key != "body" {
            return None;
        }
        let step = steps.get(index.strip_suffix(']')?.parse::<usize>().ok()?)?;
        match step.action.body() {
            Some(body) if tail.starts_with("body[") => {
                steps = body;
                rest = tail;
            }
            _ => return step.tune_range(tail),
        }
    }
}

/// Paths (`steps[2].betas`, `steps[0].body[1].iterations`) of the numeric parameters.
pub(crate) fn collect_numbers(value: &toml::Value, path: String, out: &mut Vec<String>) {
    match value {
        toml::Value::Table(table) => {
            for (key, v) in table {
                let here = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match v {
                    toml::Value::Integer(_) | toml::Value::Float(_) => out.push(here),
                    toml::Value::Array(items)
                        if items.iter().all(|x| matches!(x, toml::Value::Float(_))) =>
                    {
                        if !items.is_empty() {
                            out.push(here)
                        }
                    }
                    _ => collect_numbers(v, here, out),
                }
            }
        }
        toml::Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                collect_numbers(v, format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn parse(text: &str) -> Result<Program, String> {
        Program::parse(text, Path::new("p.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn counts_beyond_their_bound_are_refused_naming_the_path_and_the_bound() {
        let lbfgs = "name = \"p\"\n[[steps]]\nkind = \"lbfgs\"\nparameterisation = \"raw\"\n";
        assert!(parse(&format!("{lbfgs}history = 500\n")).is_ok());
        let err = parse(&format!("{lbfgs}history = 1000000000\n")).unwrap_err();
        assert!(
            err.contains("steps[0].history: must be at most 500, got 1000000000"),
            "{err}"
        );
        let err = parse(&format!("{lbfgs}history = 9223372036854775807\n")).unwrap_err();
        assert!(err.contains("must be at most 500"), "{err}");
        let nested = "name = \"p\"\n[[steps]]\nkind = \"repeat\"\ntimes = 9223372036854775807\n\
                      [[steps.body]]\nkind = \"restarts\"\ncount = 2\n\
                      [[steps.body.body]]\nkind = \"resample\"\nmethod = \"pool\"\n";
        let err = parse(nested).unwrap_err();
        assert!(
            err.contains("steps[0].times: must be at most 10000"),
            "{err}"
        );
        let restarts = nested
            .replace("9223372036854775807", "2")
            .replace("count = 2", "count = 1000000000000");
        let err = parse(&restarts).unwrap_err();
        assert!(
            err.contains("steps[0].body[0].count: must be at most 256"),
            "{err}"
        );
    }

    #[test]
    fn every_count_of_every_stage_has_a_bound() {
        // The program of every stage kind (defaults filled in) lists each count once.
        let text = crate::program::edits::tests::ALL_KINDS;
        let program = parse(text).unwrap();
        let tree = toml::Value::try_from(&program).unwrap();
        let mut leaves = Vec::new();
        collect_numbers(&tree, String::new(), &mut leaves);
        let mut counts = 0;
        for path in leaves {
            if let Some(toml::Value::Integer(_)) = leaf(&tree, &path) {
                let range = tune_range(&program, &path);
                assert!(
                    matches!(range, Some(TuneRange::Count(max)) if max >= 2),
                    "{path}: {range:?}"
                );
                counts += 1;
            }
        }
        assert!(counts >= 15, "{counts}");
    }
}
