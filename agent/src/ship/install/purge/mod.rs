//! `uninstall --purge`: everything the agent created on this Mac — its VMs and golden bases,
//! guest directories (they hold Secret values), serving keys, logs and state, and the OCI
//! cache with `--purge-images` — decided from the configuration in `plan` (pure; `refusal`
//! turns down paths that could hold what is not the agent's) and removed by `exec`. The launchd job is
//! the caller's (`uninstall` unloads it first, so the agent cannot recreate anything).

mod exec;
mod model;
mod plan;
mod refusal;

pub(crate) use exec::purge;
pub(crate) use plan::{PurgeInput, PurgePlan, plan, render};

#[cfg(test)]
mod tests;
