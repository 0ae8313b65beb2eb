//! The Secrets and ConfigMaps one Pod reads, fetched by `get` in the Pod's namespace — never a
//! list or watch, so the agent reads only what its own Pods name (and, as a node identity, only
//! what the Node authorizer lets it read). Each request has a deadline. A 404 is an answer
//! (the object does not exist: [`Sources`] records `None`); any other failure is a
//! [`ConfigError::Fetch`] naming the object, never a value.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::{Api, Client};

use super::model::{ConfigError, ObjectData, ObjectKind, Sources};
use crate::api::ApiErrorKind;

/// Fetch every `(kind, name)` in `refs` (duplicates once) from `namespace`.
///
/// # Errors
/// [`ConfigError::Fetch`] for the first object that could not be read.
pub(crate) async fn fetch(
    client: &Client,
    namespace: &str,
    refs: impl IntoIterator<Item = (ObjectKind, String)>,
    timeout: Duration,
) -> Result<Sources, ConfigError> {
    let mut sources = Sources::default();
    for (kind, name) in refs {
        if sources.objects.contains_key(&(kind, name.clone())) {
            continue;
        }
        let data = get(client, namespace, kind, &name, timeout).await?;
        sources.insert(kind, &name, data);
    }
    Ok(sources)
}

async fn get(
    client: &Client,
    namespace: &str,
    kind: ObjectKind,
    name: &str,
    timeout: Duration,
) -> Result<Option<ObjectData>, ConfigError> {
    let fail = |why: String| ConfigError::Fetch {
        kind,
        name: name.to_owned(),
        why,
    };
    let res = match kind {
        ObjectKind::Secret => {
            let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
            tokio::time::timeout(timeout, api.get_opt(name))
                .await
                .map(|r| r.map(|o| o.map(secret_data)))
        }
        ObjectKind::ConfigMap => {
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
            tokio::time::timeout(timeout, api.get_opt(name))
                .await
                .map(|r| r.map(|o| o.map(config_map_data)))
        }
    };
    match res {
        Ok(Ok(data)) => Ok(data),
        Ok(Err(e)) => Err(fail(describe(&e))),
        Err(_) => Err(fail(format!("no answer within {}s", timeout.as_secs_f32()))),
    }
}

/// An API error in words that carry no value: its kind and, for a status, the code.
fn describe(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => format!("{} ({})", ApiErrorKind::of(e).as_str(), s.code),
        _ => ApiErrorKind::of(e).as_str().to_owned(),
    }
}

/// A Secret's `data` (the API server returns `stringData` merged into it).
pub(crate) fn secret_data(s: Secret) -> ObjectData {
    s.data
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.0))
        .collect()
}

/// A ConfigMap's `data` and `binaryData` as bytes (the API server keeps their keys disjoint).
pub(crate) fn config_map_data(c: ConfigMap) -> ObjectData {
    let text = c
        .data
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.into_bytes()));
    let binary = c
        .binary_data
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.0));
    text.chain(binary).collect()
}

#[cfg(test)]
mod tests;
