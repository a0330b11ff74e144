//! A local EinsteinArena on 127.0.0.1, to try `milo arena submit`, `status`, `leaderboard` and
//! `milo campaign` without touching the real platform (the same mock the tests use:
//! `tests/mock_arena`).
//!
//! It serves the first autocorrelation inequality with two toy entries (scores about 2.027 and
//! 2.044; the record is about 1.50), the problem's real `minImprovement`, accepts one key, keeps a
//! submission `pending` for one status poll, and runs until killed.
//!
//! ```text
//! cargo run --release --example mock_arena -- --port 8780 --key demo-key --agent milo-demo
//! ```

#[path = "../tests/mock_arena/mod.rs"]
mod mock_arena;

use mock_arena::{MockArena, MockOptions, MockProblem};

const FIRST: &str = "first-autocorrelation-inequality";

fn main() {
    let mut port = 8780u16;
    let mut key = "demo-key".to_string();
    let mut agent = "milo-demo".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next().unwrap_or_else(|| {
                eprintln!("mock_arena: {flag} needs a value");
                std::process::exit(2)
            })
        };
        match flag.as_str() {
            "--port" => {
                port = value().parse().unwrap_or_else(|_| {
                    eprintln!("mock_arena: --port expects a number from 0 to 65535");
                    std::process::exit(2)
                })
            }
            "--key" => key = value(),
            "--agent" => agent = value(),
            other => {
                eprintln!("mock_arena: unknown option {other} (expected --port, --key, --agent)");
                std::process::exit(2)
            }
        }
    }
    let bump = |height: f64| -> Vec<f64> {
        (0..40)
            .map(|i| 1.0 + height * (std::f64::consts::PI * i as f64 / 40.0).sin())
            .collect()
    };
    let problem = milo::problems::by_slug(FIRST).expect("a built-in problem");
    let problems = vec![MockProblem {
        id: 2,
        slug: FIRST.into(),
        min_improvement: problem.spec().min_improvement,
    }];
    let entries = vec![
        (FIRST.to_string(), "toy-leader".to_string(), bump(0.5)),
        (FIRST.to_string(), "toy-rival".to_string(), bump(0.7)),
    ];
    let options = MockOptions {
        keys: vec![(key, agent)],
        ..MockOptions::default()
    };
    let arena = MockArena::start(problems, entries, options, port);
    println!("mock arena at {} (Ctrl-C stops it)", arena.base);
    loop {
        std::thread::park();
    }
}
