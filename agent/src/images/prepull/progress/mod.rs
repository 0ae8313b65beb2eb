//! The pre-pull progress of one Node in words, for its `ImagesPrepulled` condition. Pure.

use super::runner::{PrepullState, Progress};

/// Type of the Node condition.
pub(crate) const CONDITION: &str = "ImagesPrepulled";

/// `(status, reason, message)` of the condition: True when every image declared for this Node
/// is cached with its golden base (or none is declared).
pub(crate) fn summary(progress: &Progress) -> (bool, &'static str, String) {
    if progress.is_empty() {
        return (
            true,
            "NoImagesDeclared",
            "no image is declared for this Node".into(),
        );
    }
    let count = |s: PrepullState| progress.iter().filter(|(_, p)| *p == s).count();
    let ready = count(PrepullState::Ready);
    let total = progress.len();
    let names = |s: PrepullState| {
        progress
            .iter()
            .filter(|(_, p)| *p == s)
            .map(|(i, _)| i.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (status, reason, detail) = if ready == total {
        (true, "AllImagesReady", String::new())
    } else if count(PrepullState::Failed) > 0 {
        (
            false,
            "PrepullFailed",
            format!("; failed: {}", names(PrepullState::Failed)),
        )
    } else if count(PrepullState::Pulling) > 0 {
        (
            false,
            "Pulling",
            format!("; pulling: {}", names(PrepullState::Pulling)),
        )
    } else {
        (
            false,
            "WaitingForToken",
            format!("; waiting: {}", names(PrepullState::Waiting)),
        )
    };
    (
        status,
        reason,
        format!("{ready} of {total} declared images ready{detail}"),
    )
}

#[cfg(test)]
mod tests;
