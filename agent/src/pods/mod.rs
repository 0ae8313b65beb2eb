//! Pod side of the agent: every Pod bound to this node becomes a Tart VM.
//!
//! Pure cores: [`admission`], [`image`], [`resources`], [`plan`], [`status`], [`events`].
pub mod admission;
pub mod events;
pub mod image;
pub mod metrics;
pub mod plan;
pub mod resources;
pub mod status;

#[cfg(test)]
pub(crate) mod fixtures;
