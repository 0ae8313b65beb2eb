//! PURE: the `metav1.Status` bodies of the streaming routes, typed (k8s-openapi's `Status`)
//! and serialized with serde_json. A refusal before the upgrade is a whole object (`kind:
//! Status`, `apiVersion: v1`), which kubectl prints as `Error from server (<reason>):
//! <message>`; what the remotecommand error stream carries after the upgrade is the bare
//! status kubelet writes there, without `kind` and `apiVersion`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Status, StatusCause, StatusDetails};

/// `Success`.
const SUCCESS: &str = "Success";
/// `Failure`.
const FAILURE: &str = "Failure";

/// A refusal with HTTP status `code`, its reason the one kubelet gives that code.
pub(crate) fn refusal(code: u16, message: &str) -> Status {
    let reason = match code {
        400 => "BadRequest",
        403 => "Forbidden",
        404 => "NotFound",
        429 => "TooManyRequests",
        _ => "InternalError",
    };
    Status {
        status: Some(FAILURE.to_owned()),
        message: Some(message.to_owned()),
        reason: Some(reason.to_owned()),
        code: Some(i32::from(code)),
        ..Status::default()
    }
}

/// The status of a command that exited 0.
pub(crate) fn success() -> Status {
    Status {
        status: Some(SUCCESS.to_owned()),
        ..Status::default()
    }
}

/// A failure for `reason`, with `message` and one cause.
pub(crate) fn failure(
    message: String,
    reason: &str,
    code: Option<i32>,
    cause: StatusCause,
) -> Status {
    Status {
        status: Some(FAILURE.to_owned()),
        message: Some(message),
        reason: Some(reason.to_owned()),
        code,
        details: Some(StatusDetails {
            causes: Some(vec![cause]),
            ..StatusDetails::default()
        }),
        ..Status::default()
    }
}

/// `status` as a response body: the whole object, `kind` and `apiVersion` included.
pub(crate) fn body(status: &Status) -> String {
    serde_json::to_string(status).unwrap_or_default()
}

/// `status` as the error stream carries it: without `kind` and `apiVersion`, as kubelet
/// writes a status whose type it does not set.
pub(crate) fn stream_body(status: &Status) -> String {
    let mut value = serde_json::to_value(status).unwrap_or_default();
    if let Some(object) = value.as_object_mut() {
        object.remove("kind");
        object.remove("apiVersion");
    }
    value.to_string()
}

#[cfg(test)]
mod tests;
