//! Confinement of the commands a language model wrote (a `command` stage with `confine = true`):
//! the process and everything it starts may read and execute anywhere, but write only beneath
//! its own work directory (and to `/dev/null`), open no TCP connection, bind no TCP port, signal
//! no process outside the sandbox and reach no abstract UNIX socket outside it. Its environment
//! is cleared to `PATH`, `LANG` and a `HOME` inside the work directory, so no API key in milo's
//! environment reaches it.
//!
//! Built on Linux Landlock (kernel 5.13 or later, [`landlock`]). The filesystem part is required:
//! on a kernel without Landlock, or with Landlock disabled, [`confine`] fails and the command is
//! not run. The network rules (kernel 6.7) and the scopes (kernel 6.12) are applied where the
//! kernel has them.

use crate::subprocess::BeforeExec;
use landlock::{
    path_beneath_rules, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, Scope, ABI,
};
use std::path::Path;
use std::process::Command;

/// The newest Landlock ABI whose rights the confinement asks for (best effort beyond the
/// filesystem rights of the first).
const NEWEST: ABI = ABI::V6;

/// Prepares `command` to run confined to `workdir` (see the module): clears its environment
/// and returns the step that applies the Landlock ruleset in the program's process, for
/// [`crate::subprocess::run_with`] (after the tether, so a user namespace is set up before the
/// restriction). An error (one line) says why it cannot be confined; the command must then not
/// run.
pub fn confine(command: &mut Command, workdir: &Path) -> Result<BeforeExec, String> {
    let ruleset = ruleset(workdir).map_err(|e| {
        format!("cannot confine a model's command (Linux Landlock is required): {e}")
    })?;
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LANG", "C.UTF-8")
        .env("HOME", workdir);
    let mut pending = Some(ruleset);
    // Run between fork and exec: it only calls prctl and landlock_restrict_self on a ruleset
    // built (and its file descriptor opened) in the parent.
    Ok(Box::new(move || match pending.take() {
        Some(ruleset) => match ruleset.restrict_self() {
            Ok(_) => Ok(()),
            Err(_) => Err(std::io::ErrorKind::PermissionDenied.into()),
        },
        None => Ok(()),
    }))
}

/// The ruleset: read and execute beneath `/`, everything beneath `workdir`, writes to
/// `/dev/null`; TCP and scopes handled with no rule (so denied).
fn ruleset(workdir: &Path) -> Result<RulesetCreated, landlock::RulesetError> {
    let read = AccessFs::from_read(NEWEST);
    let all = AccessFs::from_all(NEWEST);
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V1))?
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)?
        .handle_access(AccessNet::from_all(NEWEST))?
        .scope(Scope::from_all(NEWEST))?
        .create()?
        .add_rules(path_beneath_rules(["/"], read))?
        .add_rules(path_beneath_rules([workdir], all))?
        .add_rules(path_beneath_rules(
            ["/dev/null"],
            AccessFs::from_file(NEWEST),
        ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `sh -c script` confined to a fresh directory; its exit status and the directory.
    fn run_confined(script: &str) -> (std::process::ExitStatus, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let mut command = Command::new("sh");
        command.arg("-c").arg(script).current_dir(dir.path());
        let restrict =
            confine(&mut command, dir.path()).expect("this machine's kernel has Landlock");
        let limits = crate::subprocess::Limits::wall(std::time::Duration::from_secs(60));
        let cancel = crate::cancel::CancelToken::new();
        let finished =
            crate::subprocess::run_with(command, &limits, &cancel, Some(restrict)).unwrap();
        (finished.status, dir)
    }

    #[test]
    fn a_confined_command_writes_in_its_directory_and_nowhere_else() {
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("escaped");
        let script = format!(
            "echo in > inside; echo out > '{}'; test -f inside",
            target.display()
        );
        let (status, dir) = run_confined(&script);
        assert!(status.success(), "{status}");
        assert!(dir.path().join("inside").exists());
        assert!(!target.exists(), "the command wrote outside its directory");
    }

    #[test]
    fn a_confined_command_sees_no_secret_in_its_environment() {
        std::env::set_var("MILO_SANDBOX_TEST_SECRET", "sk-sandbox-test");
        let (status, dir) = run_confined("env > seen");
        assert!(status.success(), "{status}");
        let seen = std::fs::read_to_string(dir.path().join("seen")).unwrap();
        assert!(!seen.contains("sk-sandbox-test"), "{seen}");
        assert!(seen.contains("PATH="), "{seen}");
    }

    #[test]
    fn a_confined_command_opens_no_tcp_connection() {
        if Command::new("python3").arg("-V").output().is_err() {
            eprintln!("SKIP a_confined_command_opens_no_tcp_connection: no python3");
            return;
        }
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let connect = format!(
            "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 5)\""
        );
        // Unconfined, the same line connects: the refusal below is the sandbox's.
        let status = Command::new("sh").arg("-c").arg(&connect).status().unwrap();
        assert!(status.success(), "{status}");
        let (status, _dir) = run_confined(&connect);
        assert!(
            !status.success(),
            "a confined command connected to 127.0.0.1:{port}"
        );
    }
}
