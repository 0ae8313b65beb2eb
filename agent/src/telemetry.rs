//! Logging set-up: `tracing` to stderr as text or JSON lines, filtered by the configured
//! directive (default `info,kube=warn`), optionally also written to a size-rotated file ([`logfile`]).

use std::path::Path;

pub(crate) mod logfile;

use tracing_subscriber::{
    EnvFilter,
    fmt::{
        self,
        writer::{BoxMakeWriter, MakeWriterExt},
    },
    layer::SubscriberExt,
    util::SubscriberInitExt,
};

use crate::{
    config::LogFormat,
    telemetry::logfile::{DEFAULT_KEEP, DEFAULT_MAX_BYTES, RotatingFile},
};

/// Why logging could not be set up.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TelemetryError {
    /// The filter directive does not parse.
    #[error("invalid log filter {filter:?}")]
    Filter {
        /// The directive.
        filter: String,
        #[source]
        source: tracing_subscriber::filter::ParseError,
    },
    /// The log file cannot be opened.
    #[error("cannot open log file {path}")]
    File {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Install the global subscriber. Calling it twice is harmless (the second call is ignored).
///
/// # Errors
/// [`TelemetryError`] for a bad filter or an unopenable log file.
pub(crate) fn init(
    format: LogFormat,
    filter: &str,
    file: Option<&Path>,
) -> Result<(), TelemetryError> {
    let make_filter = || {
        EnvFilter::try_new(filter).map_err(|source| TelemetryError::Filter {
            filter: filter.to_owned(),
            source,
        })
    };
    let writer = match file {
        Some(path) => {
            if let Some(dir) = path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let f =
                RotatingFile::open(path, DEFAULT_MAX_BYTES, DEFAULT_KEEP).map_err(|source| {
                    TelemetryError::File {
                        path: path.to_owned(),
                        source,
                    }
                })?;
            // Under launchd stderr is StandardErrorPath, which nothing rotates: with a log
            // file, stderr only gets warnings and errors.
            BoxMakeWriter::new(std::io::stderr.with_max_level(tracing::Level::WARN).and(f))
        }
        None => BoxMakeWriter::new(std::io::stderr),
    };
    let layer = fmt::layer().with_writer(writer).with_ansi(false);
    let registry = tracing_subscriber::registry().with(make_filter()?);
    let res = if format == LogFormat::Json {
        registry.with(layer.json()).try_init()
    } else {
        registry.with(layer).try_init()
    };
    // Already initialised (tests, or a second call): keep the first subscriber.
    let _ = res;
    Ok(())
}
