//! Reading a model's answer as a program: the fenced block, and the program it holds (a TOML
//! program, or a script wrapped as a program of one `command` stage).

use crate::harness::OutputKind;
use crate::program::Program;
use std::path::Path;

/// Longest error text kept or fed back, in characters.
const MAX_ERROR: usize = 1_000;

/// The body of the last fenced block of `text` whose fence names one of `languages` (three
/// backticks, then e.g. `toml`, case-insensitive); a block the answer leaves open (a reply cut at
/// its token limit) runs to the end.
pub fn extract_block<'a>(text: &'a str, languages: &[&str]) -> Option<&'a str> {
    let mut found = None;
    let mut rest = text;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        let line_end = after.find('\n').unwrap_or(after.len());
        let language = after[..line_end].trim().to_ascii_lowercase();
        let body_start = (line_end + 1).min(after.len());
        let body = &after[body_start..];
        let (block, next) = match body.find("```") {
            Some(close) => (&body[..close], &body[close + 3..]),
            None => (body, ""),
        };
        if languages.contains(&language.as_str()) {
            found = Some(block);
        }
        rest = next;
    }
    found
}

/// The program an answer holds under `output`, or why it holds none (one line, bounded).
pub fn program_of(
    answer: &str,
    output: OutputKind,
    script_argv: &[String],
) -> Result<Program, String> {
    let origin = Path::new("the answer");
    let program = match output {
        OutputKind::Program => match extract_block(answer, &["toml"]) {
            Some(block) => Program::parse(block, origin).map_err(|e| e.to_string()),
            None if answer.trim().is_empty() => Err("the answer is empty".into()),
            None => Program::parse(answer, origin)
                .map_err(|e| format!("no ```toml block, and the whole answer is no program: {e}")),
        },
        OutputKind::Script => {
            let script = extract_block(answer, &["python", "py", "python3"])
                .ok_or("no ```python block in the answer")?;
            Program::parse(&script_program(script, script_argv), origin).map_err(|e| e.to_string())
        }
    };
    program.map_err(|e| one_line(&e))
}

/// A model's `program` as it may run: with every `command` step confined
/// ([`crate::sandbox`]) when the agents file allows a model's commands (`[writer]
/// allow_commands = true`), and refused (one line naming the first such step) when it does not.
pub fn admit_commands(program: Program, allowed: bool) -> Result<Program, String> {
    match program.confined() {
        (_, Some(path)) if !allowed => Err(format!(
            "{path} is a `command` step, and the agents file does not allow a model's commands \
             (`allow_commands = true` under [writer] allows them, confined)"
        )),
        (program, _) => Ok(program),
    }
}

/// A program of one `command` stage running `script` (inline) with `argv`.
pub fn script_program(script: &str, argv: &[String]) -> String {
    let mut step = toml::Table::new();
    step.insert("kind".into(), "command".into());
    step.insert(
        "argv".into(),
        toml::Value::Array(argv.iter().map(|a| a.as_str().into()).collect()),
    );
    step.insert("script".into(), script.into());
    let mut program = toml::Table::new();
    program.insert("name".into(), "llm-script".into());
    program.insert(
        "description".into(),
        "A script the LLM writer wrote, run by a command stage.".into(),
    );
    program.insert(
        "steps".into(),
        toml::Value::Array(vec![toml::Value::Table(step)]),
    );
    toml::to_string(&program).expect("a table serialises")
}

/// `text` on one line (newlines as ` / `), at most [`MAX_ERROR`] characters.
pub fn one_line(text: &str) -> String {
    let joined = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" / ");
    match joined.char_indices().nth(MAX_ERROR) {
        Some((cut, _)) => format!("{}…", &joined[..cut]),
        None => joined,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_named_block_is_taken_and_an_open_one_runs_to_the_end() {
        let text = "x\n```toml\na = 1\n```\nthen\n```python\nprint(1)\n```\n```TOML\nb = 2\n```";
        assert_eq!(extract_block(text, &["toml"]), Some("b = 2\n"));
        assert_eq!(extract_block(text, &["python"]), Some("print(1)\n"));
        assert_eq!(
            extract_block("```toml\nname = \"cut", &["toml"]),
            Some("name = \"cut")
        );
        assert_eq!(extract_block("no block", &["toml"]), None);
    }

    #[test]
    fn a_script_becomes_one_command_stage_holding_it() {
        let argv: Vec<String> = ["python3", "{script}", "{input}", "{output}"]
            .map(String::from)
            .to_vec();
        let code = "import numpy as np\nprint(\"\"\"quotes\"\"\")\n";
        let text = script_program(code, &argv);
        let value: toml::Table = toml::from_str(&text).unwrap();
        let step = &value["steps"].as_array().unwrap()[0];
        assert_eq!(step["kind"].as_str(), Some("command"));
        assert_eq!(step["script"].as_str(), Some(code));
        assert_eq!(step["argv"].as_array().unwrap().len(), 4);
        let e = program_of("no code here", OutputKind::Script, &argv).unwrap_err();
        assert!(e.contains("```python"), "{e}");
    }

    #[test]
    fn errors_are_one_bounded_line() {
        let long = "a\nb\n".repeat(2_000);
        let line = one_line(&long);
        assert!(!line.contains('\n'));
        assert!(line.chars().count() <= MAX_ERROR + 1);
    }
}
