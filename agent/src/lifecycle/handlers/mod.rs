pub mod exec;
pub mod http;
pub mod outcome;
pub mod tcp;
mod tls;
pub mod url;
