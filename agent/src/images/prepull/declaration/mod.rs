//! The operators' pre-pull declaration: a ConfigMap (default `tart-kubelet/tart-kubelet-prepull`)
//! whose `prepull.json` lists the images to keep warm, each with an optional node selector, and
//! the fleet-wide pacing caps. Pure: parsing, matching a Node, the cap.
//!
//! ```json
//! {"images": [{"image": "ghcr.io/acme/macos-runner:v2",
//!              "nodeSelector": {"tart.run/chip": "Apple-M2"}}],
//!  "maxConcurrentPulls": 2, "maxConcurrentPercent": 25}
//! ```

use std::collections::BTreeMap;

use serde::Deserialize;

/// The ConfigMap key holding the declaration.
pub(crate) const DATA_KEY: &str = "prepull.json";

/// One image to keep warm.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Wanted {
    /// The image, as a Pod would name it.
    pub image: String,
    /// Only Nodes with all these labels (absent: every Node).
    #[serde(default)]
    pub node_selector: BTreeMap<String, String>,
}

/// The whole declaration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Declaration {
    /// Images to keep warm.
    #[serde(default)]
    pub images: Vec<Wanted>,
    /// At most this many agents pull the same image at once.
    pub max_concurrent_pulls: Option<u32>,
    /// At most this percentage of the Nodes an image is declared for pull it at once.
    pub max_concurrent_percent: Option<u32>,
}

/// Why a declaration was refused (the agent keeps the last good one).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DeclarationError {
    /// The ConfigMap has no `prepull.json`.
    #[error("the ConfigMap has no {DATA_KEY:?} key")]
    MissingKey,
    /// Not the JSON shape above.
    #[error("{DATA_KEY} is not a valid pre-pull declaration: {0}")]
    Invalid(String),
    /// A percentage outside 1–100, or a zero cap.
    #[error("{0}")]
    BadCap(&'static str),
}

impl Declaration {
    /// Parse the ConfigMap's data.
    ///
    /// # Errors
    /// [`DeclarationError`] naming what is wrong.
    pub(crate) fn parse(data: &BTreeMap<String, String>) -> Result<Self, DeclarationError> {
        let text = data.get(DATA_KEY).ok_or(DeclarationError::MissingKey)?;
        let d: Declaration =
            serde_json::from_str(text).map_err(|e| DeclarationError::Invalid(e.to_string()))?;
        if d.max_concurrent_pulls == Some(0) {
            return Err(DeclarationError::BadCap(
                "maxConcurrentPulls must be at least 1",
            ));
        }
        if d.max_concurrent_percent.is_some_and(|p| p == 0 || p > 100) {
            return Err(DeclarationError::BadCap(
                "maxConcurrentPercent must be between 1 and 100",
            ));
        }
        Ok(d)
    }

    /// The images declared for a Node with these labels, in declaration order, each once.
    pub(crate) fn wanted_by(&self, labels: &BTreeMap<String, String>) -> Vec<&Wanted> {
        let mut seen = std::collections::BTreeSet::new();
        self.images
            .iter()
            .filter(|w| w.matches(labels))
            .filter(|w| seen.insert(w.image.as_str()))
            .collect()
    }

    /// How many agents may pull one image at once, given how many Nodes it is declared for:
    /// `max(1, min(maxConcurrentPulls, ceil(maxConcurrentPercent % × matching)))`; `None`
    /// when neither cap is declared.
    pub(crate) fn cap(&self, matching_nodes: u32) -> Option<u32> {
        let by_percent = self
            .max_concurrent_percent
            .map(|p| (u64::from(matching_nodes) * u64::from(p)).div_ceil(100))
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX));
        let cap = match (self.max_concurrent_pulls, by_percent) {
            (None, None) => return None,
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (Some(a), Some(b)) => a.min(b),
        };
        Some(cap.max(1))
    }
}

impl Wanted {
    /// Whether a Node with these labels is meant to hold the image.
    pub(crate) fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.node_selector
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
    }
}

#[cfg(test)]
mod tests;
