//! The node side's own check that tart is usable: `tart --version` works and is recent
//! enough, and `TART_HOME` is writable. The verdict is pure ([`verdict`]); [`probe`] does
//! the I/O, each step under a deadline.

use std::{path::Path, time::Duration};

use tart::Tart;

use super::health::TartProbe;

/// Turn the outcome of `tart --version` into a probe verdict (before the `TART_HOME` check).
pub(crate) fn verdict(
    version: Result<tart::Version, tart::Error>,
    minimum: (u32, u32, u32),
) -> TartProbe {
    match version {
        Err(e) if e.kind() == tart::ErrorKind::Spawn => TartProbe::NotFound {
            message: e.message.clone(),
        },
        Err(e) => TartProbe::Failing {
            message: format!("{}: {}", e.kind().as_str(), e.message),
        },
        // `SNAPSHOT` builds (made outside Tart's CI) have no number: accept them.
        Ok(v) => match v.semver {
            Some(sv) if sv < minimum => TartProbe::VersionUnsupported {
                version: v.raw,
                minimum: format!("{}.{}.{}", minimum.0, minimum.1, minimum.2),
            },
            _ => TartProbe::Ok { version: v.raw },
        },
    }
}

/// Probe `tart` and `tart_home`. `deadline` bounds each step (the tart crate has its own
/// deadline too; this one also bounds a test double that never answers).
pub(crate) async fn probe<T: Tart>(
    tart: &T,
    tart_home: &Path,
    minimum: (u32, u32, u32),
    deadline: Duration,
) -> TartProbe {
    let version = match tokio::time::timeout(deadline, tart.version()).await {
        Ok(v) => v,
        Err(_) => {
            return TartProbe::Failing {
                message: format!("tart --version did not answer within {deadline:?}"),
            };
        }
    };
    let v = verdict(version, minimum);
    if !matches!(v, TartProbe::Ok { .. }) {
        return v;
    }
    match tokio::time::timeout(deadline, check_writable(tart_home)).await {
        Ok(Ok(())) => v,
        Ok(Err(e)) => TartProbe::HomeNotWritable {
            message: format!("{}: {e}", tart_home.display()),
        },
        Err(_) => TartProbe::HomeNotWritable {
            message: format!(
                "{}: write did not finish within {deadline:?}",
                tart_home.display()
            ),
        },
    }
}

/// Create `dir` if needed, then create and remove a probe file in it.
async fn check_writable(dir: &Path) -> std::io::Result<()> {
    tokio::fs::create_dir_all(dir).await?;
    let probe = dir.join(format!(".tart-kubelet-probe-{}", std::process::id()));
    tokio::fs::write(&probe, b"ok").await?;
    tokio::fs::remove_file(&probe).await
}

#[cfg(test)]
mod tests;
