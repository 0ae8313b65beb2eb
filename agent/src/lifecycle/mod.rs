pub mod handlers;
pub mod hooks;
pub mod probes;
