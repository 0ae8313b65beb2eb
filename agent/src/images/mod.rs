//! The images this Mac holds: golden base VMs per digest, the disk budget over the cache and
//! the goldens, and the Node's `status.images`. Pure decisions here; the I/O that feeds them
//! (`tart::cache::scan`, `tart list`, `statvfs`) stays with the callers.

pub mod budget;
pub mod golden;
pub mod goldens;
pub mod inventory;
pub mod keeper;
pub mod metrics;
pub mod prepull;
pub mod reference;
