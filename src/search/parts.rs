//! The registry of a search's parts: the writer, the mutators, the orchestrator, the lineage
//! store and the executor, each chosen by name. A run records the names in its settings
//! ([`RunConfig`]), and `--resume` rebuilds the same parts from them; an unknown name is a
//! usage error naming it and listing the known ones. Tests inject parts of their own through
//! [`Parts`] (see [`super::evolve::Search::start_with`]).

use super::lineage::{
    JsonlLineage, LineageRecord, LineageStore, RunConfig, DEFAULT_EXECUTOR, DEFAULT_LINEAGE_STORE,
    DEFAULT_ORCHESTRATOR, LINEAGE_FILE,
};
use super::mutators::{self, Mutator};
use super::orchestrator::llm::LlmOrchestrator;
use super::orchestrator::{BuiltinOrchestrator, Orchestrator};
use crate::agent::writer_by_name;
use crate::error::{MiloError, Result};
use crate::executor::{Executor, LocalThreads, Slurm, SlurmOptions};
use crate::llm::AgentsConfig;
use std::path::Path;

/// Names of the orchestrators (the first is the default).
pub const ORCHESTRATORS: [&str; 2] = [DEFAULT_ORCHESTRATOR, "llm"];

/// Names of the lineage stores (the first is the default).
pub const LINEAGE_STORES: [&str; 1] = [DEFAULT_LINEAGE_STORE];

/// Names of the executors (the first is the default).
pub const EXECUTORS: [&str; 2] = [DEFAULT_EXECUTOR, "slurm"];

/// The spool of the `slurm` executor, inside the run directory (which must be on a filesystem
/// the cluster's nodes share).
pub const SPOOL_DIR: &str = "spool";

/// The parts a search runs with, besides its lineage store.
pub struct Parts {
    /// The mutators islands may use, found by name: the run's pool, which the orchestrator
    /// reassigns islands from, in order.
    pub mutators: Vec<Box<dyn Mutator>>,
    /// Consulted when islands stall.
    pub orchestrator: Box<dyn Orchestrator>,
    /// Runs the attempts of every evaluation.
    pub executor: Box<dyn Executor>,
}

impl Parts {
    /// The parts named in `config` (its writer and lineage store are checked too; the executor
    /// finds the writer by name itself), the executor with `jobs` threads, its spool (if it
    /// spools) in the run directory `dir`.
    pub fn named(config: &RunConfig, jobs: usize, dir: &Path) -> Result<Parts> {
        writer_by_name(&config.writer, config.agents.as_ref())?;
        check_store(&config.lineage_store)?;
        let mut names: Vec<&str> = Vec::new();
        for name in &config.mutators {
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
        Ok(Parts {
            mutators: names
                .into_iter()
                .map(|name| mutator(name, config.agents.as_ref()))
                .collect::<Result<_>>()?,
            orchestrator: orchestrator(&config.orchestrator, config.agents.as_ref())?,
            executor: executor(
                &config.executor,
                jobs,
                &dir.join(SPOOL_DIR),
                config.slurm.clone(),
            )?,
        })
    }

    /// The mutator called `name` among these parts.
    pub fn mutator(&self, name: &str) -> Result<&dyn Mutator> {
        self.mutators
            .iter()
            .find(|m| m.name() == name)
            .map(|m| m.as_ref())
            .ok_or_else(|| {
                let known: Vec<&str> = self.mutators.iter().map(|m| m.name()).collect();
                unknown("mutator", name, &known)
            })
    }
}

fn unknown(part: &str, name: &str, known: &[&str]) -> MiloError {
    MiloError::Usage(format!(
        "unknown {part} '{name}' (known: {})",
        known.join(", ")
    ))
}

/// The mutator called `name`; LLM mutators draw on the pools of `agents` (the run's agents
/// file).
pub fn mutator(name: &str, agents: Option<&AgentsConfig>) -> Result<Box<dyn Mutator>> {
    if name == mutators::llm::NAME {
        let pool = agents
            .ok_or_else(|| needs_agents("mutator", name))?
            .pool("mutator")?;
        return Ok(Box::new(mutators::llm::LlmMutator::new(pool)));
    }
    mutators::by_name(name).ok_or_else(|| {
        let mut known = mutators::KNOWN.to_vec();
        known.push(mutators::llm::NAME);
        unknown("mutator", name, &known)
    })
}

/// The error for an LLM part in a run without an agents file.
fn needs_agents(part: &str, name: &str) -> MiloError {
    MiloError::Usage(format!(
        "{part} '{name}' needs an agents file (--agents FILE) with a [{part}] role"
    ))
}

/// The orchestrator called `name`; an LLM orchestrator draws on the pools of `agents` (the
/// run's agents file).
pub fn orchestrator(name: &str, agents: Option<&AgentsConfig>) -> Result<Box<dyn Orchestrator>> {
    match name {
        "builtin" => Ok(Box::new(BuiltinOrchestrator)),
        "llm" => {
            let agents = agents.ok_or_else(|| needs_agents("orchestrator", name))?;
            Ok(Box::new(LlmOrchestrator::new(agents.pool("orchestrator")?)))
        }
        _ => Err(unknown("orchestrator", name, &ORCHESTRATORS)),
    }
}

/// The executor called `name`: with `jobs` threads where it uses threads; where it spools, its
/// spool at `spool` and its submission options `slurm` (defaults when absent).
pub fn executor(
    name: &str,
    jobs: usize,
    spool: &Path,
    slurm: Option<SlurmOptions>,
) -> Result<Box<dyn Executor>> {
    match name {
        "local-threads" => Ok(Box::new(LocalThreads::new(jobs))),
        "slurm" => Ok(Box::new(Slurm::new(spool, slurm.unwrap_or_default())?)),
        _ => Err(unknown("executor", name, &EXECUTORS)),
    }
}

fn check_store(name: &str) -> Result<()> {
    match LINEAGE_STORES.contains(&name) {
        true => Ok(()),
        false => Err(unknown("lineage store", name, &LINEAGE_STORES)),
    }
}

/// Creates the lineage store called `name` for a new run in `dir`.
pub fn create_store(name: &str, dir: &Path) -> Result<Box<dyn LineageStore>> {
    check_store(name)?;
    Ok(Box::new(JsonlLineage::create(dir)?))
}

/// Opens the run in `dir`: its store, its settings and its records. The settings are the first
/// record, so the store is found by its file (`lineage.jsonl`) and then checked against the
/// recorded name.
pub fn open_store(dir: &Path) -> Result<(Box<dyn LineageStore>, RunConfig, Vec<LineageRecord>)> {
    let (store, records) = JsonlLineage::open(dir)?;
    let Some(LineageRecord::Started(config)) = records.first().cloned() else {
        return Err(MiloError::Malformed {
            path: dir.join(LINEAGE_FILE),
            message: "the first record is not the run's settings".into(),
        });
    };
    if config.lineage_store != LINEAGE_STORES[0] {
        return Err(MiloError::Malformed {
            path: dir.join(LINEAGE_FILE),
            message: format!(
                "the run's lineage store is '{}', but its records are JSON lines",
                config.lineage_store
            ),
        });
    }
    Ok((Box::new(store), *config, records))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_name_is_a_usage_error_naming_it_and_the_known_ones() {
        let err = |r: Result<()>| r.unwrap_err().to_string();
        let e = err(mutator("gardener", None).map(|_| ()));
        assert!(
            e.contains("'gardener'") && e.contains("tuner, structural"),
            "{e}"
        );
        let e = err(orchestrator("oracle", None).map(|_| ()));
        assert!(e.contains("'oracle'") && e.contains("builtin"), "{e}");
        let e = err(executor("kubernetes", 2, Path::new("spool"), None).map(|_| ()));
        assert!(
            e.contains("'kubernetes'") && e.contains("local-threads, slurm"),
            "{e}"
        );
        let e = err(check_store("sqlite"));
        assert!(e.contains("'sqlite'") && e.contains("jsonl"), "{e}");
        let e = err(writer_by_name("gpt", None).map(|_| ()));
        assert!(
            e.contains("'gpt'") && e.contains("builtin, verbatim, llm"),
            "{e}"
        );
        let e = err(writer_by_name("llm", None).map(|_| ()));
        assert!(e.contains("--agents"), "{e}");
        for name in mutators::KNOWN {
            assert_eq!(mutator(name, None).unwrap().name(), name);
        }
    }

    #[test]
    fn llm_parts_need_an_agents_file_with_their_role() {
        let e = mutator("llm", None).err().unwrap().to_string();
        assert!(
            e.contains("'llm'") && e.contains("--agents") && e.contains("[mutator]"),
            "{e}"
        );
        let e = orchestrator("llm", None).err().unwrap().to_string();
        assert!(e.contains("[orchestrator]"), "{e}");
        let agents = AgentsConfig::parse(
            "[[backend]]\nname = \"m\"\nkind = \"openai\"\napi_base = \"http://127.0.0.1:9/v1\"\n\
             model = \"x\"\n[orchestrator]\nbackends = [\"m\"]\n",
            Path::new("agents.toml"),
        )
        .unwrap();
        let e = mutator("llm", Some(&agents)).err().unwrap().to_string();
        assert!(e.contains("no [mutator]"), "{e}");
        assert_eq!(orchestrator("llm", Some(&agents)).unwrap().name(), "llm");
        let e = mutator("gardener", None).err().unwrap().to_string();
        assert!(e.contains("blind, llm"), "{e}");
    }
}
