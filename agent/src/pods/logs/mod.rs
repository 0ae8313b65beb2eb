//! The kubelet API's log seam; the store it serves is [`crate::container_logs`].

pub mod serve;
