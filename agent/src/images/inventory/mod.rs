//! `status.images` from the image cache, as kubelet reports it: the biggest images first, at
//! most [`MAX_IMAGES`] of them, each named by its digest name(s) then its tags (at most
//! [`MAX_NAMES`] names), with its size. The scheduler's image-locality score reads it to prefer
//! Macs that already hold a Pod's image.

use k8s_openapi::api::core::v1::ContainerImage;

/// kubelet's `--node-status-max-images` default.
pub(crate) const MAX_IMAGES: usize = 50;

/// kubelet's limit on names per image in the Node status.
pub(crate) const MAX_NAMES: usize = 5;

/// One cached image as the inventory needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Held {
    /// `host/repository@sha256:<hex>`.
    pub digest_name: String,
    /// `host/repository:tag` names pointing at it.
    pub tag_names: Vec<String>,
    /// Bytes on disk, golden included.
    pub bytes: u64,
}

/// The Node's `status.images`.
pub(crate) fn node_images(held: &[Held]) -> Vec<ContainerImage> {
    let mut sorted: Vec<&Held> = held.iter().collect();
    sorted.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then(a.digest_name.cmp(&b.digest_name))
    });
    sorted
        .into_iter()
        .take(MAX_IMAGES)
        .map(|h| ContainerImage {
            names: Some(
                std::iter::once(h.digest_name.clone())
                    .chain(h.tag_names.iter().cloned())
                    .take(MAX_NAMES)
                    .collect(),
            ),
            size_bytes: Some(i64::try_from(h.bytes).unwrap_or(i64::MAX)),
        })
        .collect()
}

#[cfg(test)]
mod tests;
