//! What a Pod gives its container, carried into the guest: the environment, the volumes, the
//! service-account token and the command, written on the host into per-VM directories that
//! `tart run --dir` shares with the guest, where the guest launcher reads them
//! (docs/guest.md is the contract).
//!
//! Pure cores: [`model`] (shared types), [`expand`] (`$(VAR)`), [`downward`] (fieldRef and
//! resourceFieldRef values), [`env`] (kubelet's environment), [`volumes`] (volume files),
//! [`job`] (the job's busy/idle mark). I/O: [`atomic`] (kubelet's `..data` swap), [`control`]
//! (the control share), [`layout`] (the per-VM root), [`token`] (TokenRequest), [`fetch`]
//! (Secrets and ConfigMaps by `get`), [`prepare`] (everything before `tart run`, and the
//! refresh of volumes and tokens while the VM runs), [`status`] (what the launcher reports in
//! the status share), [`deliver`] (the shipped launcher installed through the Tart Guest
//! Agent when an image has none). Nothing here knows the Pod side's events or metrics: the Pod's worker
//! turns [`prepare::GuestWarning`]s into events, and `pods::guest_refresh` runs the refresh
//! task and reports its failures.

pub(crate) mod atomic;
pub(crate) mod control;
pub(crate) mod deliver;
pub(crate) mod downward;
pub(crate) mod env;
pub(crate) mod expand;
pub(crate) mod fetch;
pub(crate) mod job;
pub(crate) mod layout;
pub(crate) mod model;
pub(crate) mod prepare;
pub(crate) mod status;
pub(crate) mod token;
pub(crate) mod volumes;
