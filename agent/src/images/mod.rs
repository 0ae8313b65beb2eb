//! The images this Mac holds: golden base VMs per digest, the disk budget over the cache and
//! the goldens, and the Node's `status.images`. Pure decisions here; the I/O that feeds them
//! (`tart::cache::scan`, `tart list`, `statvfs`) stays with the callers.

pub(crate) mod budget;
pub(crate) mod golden;
pub(crate) mod goldens;
pub(crate) mod inventory;
pub(crate) mod keeper;
pub(crate) mod metrics;
pub(crate) mod prepull;
pub(crate) mod reference;
