//! How one probe attempt ended ([`Outcome`], with kubelet's text) and its closed
//! [`ProbeResult`] for metric labels. A leaf: every check returns one.

/// How one attempt ended, with kubelet's text for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The check passed.
    Success,
    /// The check passed, with a remark worth an event (an HTTP redirect to another host that
    /// was not followed: kubelet's `ProbeWarning`).
    Warning(String),
    /// The check failed: counts towards `failureThreshold`.
    Failure(String),
    /// The check could not be made (VM not running, `tart` missing): thrown away, counted
    /// neither way, but reported.
    Error(String),
}

/// The closed result of an attempt, for metric labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ProbeResult {
    /// Success or warning.
    Success,
    Failure,
    /// The attempt could not be made.
    Error,
}

impl ProbeResult {
    /// Every result, for pre-creating metric series.
    pub(crate) const ALL: [ProbeResult; 3] = [Self::Success, Self::Failure, Self::Error];

    /// Metric label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Failure => "failure",
            Self::Error => "error",
        }
    }
}

impl Outcome {
    /// The closed result (a warning is a success, as kubelet counts it).
    pub(crate) fn result(&self) -> ProbeResult {
        match self {
            Self::Success | Self::Warning(_) => ProbeResult::Success,
            Self::Failure(_) => ProbeResult::Failure,
            Self::Error(_) => ProbeResult::Error,
        }
    }
}

#[cfg(test)]
mod tests;
