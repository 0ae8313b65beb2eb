//! The one way to write an error for a log line, an Event or a message: the error and each of
//! its sources. A foundation beside `api.rs`; it refers to nothing of ours.

/// An error and its sources, `: `-joined, for one log line or message.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

#[cfg(test)]
mod tests;
