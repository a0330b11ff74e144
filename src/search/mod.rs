//! The MILO search: islands of harnesses, paired admission, parent selection, mutators, the
//! orchestrator, and the append-only lineage that remembers everything.
//!
//! - [`evaluation`]: a harness's fitness over tasks (the agent runs under it, through an executor);
//! - [`round_tasks`]: the tasks of a round (slots, fresh seeds); [`archive`]: each slot's best
//!   program so far; [`promotion`]: constructions promoted to starts (`--promote-discoveries`);
//! - [`admission`]: the paired admission rule; [`harness_race`]: children raced block by block
//!   against one shared parent evaluation; [`hypervolume`]: exact 3-D hypervolume (recorded);
//! - [`selection`], [`similarity`]: parent selection by dominance against behavioural crowding;
//! - [`lineage`]: records and the on-disk store; [`state`]: the state they replay to;
//! - [`mutators`]: the pool of built-in mutators; [`orchestrator`]: moves when islands stall;
//! - [`parts`]: the registry of parts chosen by name; [`evolve`]: the loop assembled from them.

pub mod admission;
pub mod archive;
pub mod evaluation;
pub mod evolve;
pub mod harness_race;
pub mod hypervolume;
pub mod lineage;
pub mod mutators;
pub mod orchestrator;
pub mod parts;
pub mod promotion;
pub mod round_tasks;
pub mod selection;
pub mod similarity;
pub mod state;
