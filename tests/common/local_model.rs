//! A real local language model behind an OpenAI-compatible server, for end-to-end LLM tests.
//!
//! [`LocalModel::start`] runs `node tests/local_model/server.mjs GGUF 0` (node-llama-cpp over
//! SmolLM2-135M-Instruct, one thread, 127.0.0.1 only), waits for its `listening on
//! 127.0.0.1:PORT` line, and kills and reaps the server by PID when dropped. `.ci/run` installs
//! the model (`$MILO_TEST_GGUF`, else `~/.cache/milo/smollm2-135m.gguf`) and the server's
//! packages; without them, or without `node`, `start` prints a `SKIP` note and returns `None`.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// How long the server may take to load the model and print its port.
const START_DEADLINE: Duration = Duration::from_secs(60);

/// The GGUF the server loads: `$MILO_TEST_GGUF`, else `~/.cache/milo/smollm2-135m.gguf`.
pub fn gguf_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("MILO_TEST_GGUF") {
        return Some(PathBuf::from(path));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache/milo/smollm2-135m.gguf"))
}

/// The folder of the Node server and its packages.
pub fn server_dir() -> PathBuf {
    super::root().join("tests/local_model")
}

/// A running local model server; dropping it kills and reaps the process.
pub struct LocalModel {
    child: Child,
    port: u16,
    model_id: String,
    load_time: Duration,
}

impl LocalModel {
    /// Starts the server on a free loopback port, or returns `None` with a `SKIP:` note on
    /// stderr when `node`, the server's packages or the GGUF file are absent. Panics (with the
    /// server's stderr) when the server exits or stays silent past the start deadline.
    pub fn start() -> Option<LocalModel> {
        let gguf = gguf_path().filter(|path| path.is_file());
        let Some(gguf) = gguf else {
            eprintln!(
                "SKIP: no GGUF model at {} (set MILO_TEST_GGUF or run .ci/run)",
                gguf_path().unwrap_or_default().display()
            );
            return None;
        };
        let node_ok = Command::new("node")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|status| status.success())
            .unwrap_or(false);
        if !node_ok {
            eprintln!("SKIP: `node` is not on PATH (the local model server needs Node.js)");
            return None;
        }
        let dir = server_dir();
        if !dir
            .join("node_modules/node-llama-cpp/package.json")
            .is_file()
        {
            eprintln!(
                "SKIP: node-llama-cpp is not installed in {} (run `npm ci` there or .ci/run)",
                dir.display()
            );
            return None;
        }
        let model_id = gguf
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        let started = Instant::now();
        let mut child = Command::new("node")
            .arg("server.mjs")
            .arg(&gguf)
            .arg("0")
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("node starts");
        let stderr = collect(child.stderr.take().expect("piped stderr"));
        let lines = line_channel(child.stdout.take().expect("piped stdout"));
        let port = loop {
            let left = START_DEADLINE.saturating_sub(started.elapsed());
            match lines.recv_timeout(left) {
                Ok(line) => {
                    if let Some(port) = line.strip_prefix("listening on 127.0.0.1:") {
                        break port.trim().parse::<u16>().expect("a port number");
                    }
                }
                Err(reason) => {
                    let _ = child.kill();
                    let status = child.wait().expect("reap the server");
                    let why = match reason {
                        mpsc::RecvTimeoutError::Timeout => {
                            format!("printed no port within {START_DEADLINE:?}")
                        }
                        mpsc::RecvTimeoutError::Disconnected => format!("exited ({status})"),
                    };
                    panic!(
                        "local model server {why}; stderr:\n{}",
                        stderr.lock().unwrap()
                    );
                }
            }
        };
        Some(LocalModel {
            child,
            port,
            model_id,
            load_time: started.elapsed(),
        })
    }

    /// The OpenAI API base, `http://127.0.0.1:PORT/v1`.
    pub fn api_base(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The model name the server reports (the GGUF file's stem, e.g. `smollm2-135m`).
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// From spawning the server to its `listening on` line (loading the model included).
    pub fn load_time(&self) -> Duration {
        self.load_time
    }

    /// The server's resident memory in KiB (`VmRSS` of `/proc/PID/status`).
    pub fn rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).ok()?;
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
    }
}

impl Drop for LocalModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The lines of `stdout` as they arrive, read on a thread until the stream closes (drained
/// after the receiver is gone, so the server never blocks on a full pipe).
fn line_channel(stdout: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let _ = sender.send(line);
        }
    });
    receiver
}

/// Everything `stderr` writes, gathered on a thread (for the message of a failed start).
fn collect(mut stderr: impl Read + Send + 'static) -> Arc<Mutex<String>> {
    let text = Arc::new(Mutex::new(String::new()));
    let sink = Arc::clone(&text);
    thread::spawn(move || {
        let mut buffer = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut buffer) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buffer[..n]));
        }
    });
    text
}
