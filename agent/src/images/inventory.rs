//! `status.images` from the image cache, as kubelet reports it: the biggest images first, at
//! most [`MAX_IMAGES`] of them, each named by its digest name(s) then its tags (at most
//! [`MAX_NAMES`] names), with its size. The scheduler's image-locality score reads it to prefer
//! Macs that already hold a Pod's image.

use k8s_openapi::api::core::v1::ContainerImage;

/// kubelet's `--node-status-max-images` default.
pub const MAX_IMAGES: usize = 50;

/// kubelet's limit on names per image in the Node status.
pub const MAX_NAMES: usize = 5;

/// One cached image as the inventory needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// `host/repository@sha256:<hex>`.
    pub digest_name: String,
    /// `host/repository:tag` names pointing at it.
    pub tag_names: Vec<String>,
    /// Bytes on disk, golden included.
    pub bytes: u64,
}

/// The Node's `status.images`.
pub fn node_images(held: &[Held]) -> Vec<ContainerImage> {
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
mod tests {
    use super::*;

    fn held(name: &str, tags: &[&str], bytes: u64) -> Held {
        Held {
            digest_name: format!("r.example/{name}@sha256:{}", "0".repeat(64)),
            tag_names: tags
                .iter()
                .map(|t| format!("r.example/{name}:{t}"))
                .collect(),
            bytes,
        }
    }

    #[test]
    fn biggest_first_with_digest_then_tag_names() {
        let got = node_images(&[held("small", &["a"], 10), held("big", &["b", "c"], 30)]);
        let names: Vec<_> = got.iter().map(|i| i.names.clone().unwrap()).collect();
        assert_eq!(
            names[0][0],
            format!("r.example/big@sha256:{}", "0".repeat(64))
        );
        assert_eq!(&names[0][1..], ["r.example/big:b", "r.example/big:c"]);
        assert_eq!(got[0].size_bytes, Some(30));
        assert_eq!(names[1][1], "r.example/small:a");
    }

    #[test]
    fn at_most_fifty_images_and_five_names_each() {
        let tags: Vec<String> = (0..9).map(|i| format!("t{i}")).collect();
        let tags: Vec<&str> = tags.iter().map(String::as_str).collect();
        let many: Vec<Held> = (0..60u64)
            .map(|i| held(&format!("img{i}"), &tags, i))
            .collect();
        let got = node_images(&many);
        assert_eq!(got.len(), MAX_IMAGES);
        assert_eq!(got[0].size_bytes, Some(59), "the biggest are kept");
        assert_eq!(got[49].size_bytes, Some(10));
        assert!(
            got.iter()
                .all(|i| i.names.as_ref().unwrap().len() == MAX_NAMES)
        );
    }
}
