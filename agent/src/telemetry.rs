//! Logging set-up: `tracing` to stderr as text or JSON lines, filtered by the configured
//! directive (default `info,kube=warn`), optionally also appended to a file.

use std::{
    fs::{File, OpenOptions},
    io::Write,
    path::Path,
    sync::{Arc, Mutex},
};

use tracing_subscriber::{
    EnvFilter,
    fmt::{self, MakeWriter, writer::MakeWriterExt},
    layer::SubscriberExt,
    util::SubscriberInitExt,
};

use crate::config::LogFormat;

/// Why logging could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The filter directive does not parse.
    #[error("invalid log filter {filter:?}")]
    Filter {
        /// The directive.
        filter: String,
        /// Cause.
        #[source]
        source: tracing_subscriber::filter::ParseError,
    },
    /// The log file cannot be opened.
    #[error("cannot open log file {path}")]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
}

/// Install the global subscriber. Calling it twice is harmless (the second call is ignored).
///
/// # Errors
/// [`TelemetryError`] for a bad filter or an unopenable log file.
pub fn init(format: LogFormat, filter: &str, file: Option<&Path>) -> Result<(), TelemetryError> {
    let make_filter = || {
        EnvFilter::try_new(filter).map_err(|source| TelemetryError::Filter {
            filter: filter.to_owned(),
            source,
        })
    };
    let file_writer = match file {
        Some(path) => {
            if let Some(dir) = path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let f = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|source| TelemetryError::File {
                    path: path.to_owned(),
                    source,
                })?;
            Some(Mutex::new(f))
        }
        None => None,
    };
    let writer = std::io::stderr.and(FileWriter(file_writer.map(Arc::new)));
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

/// Appends to the shared log file; a missing file (`None`) swallows the output.
#[derive(Clone)]
struct FileWriter(Option<Arc<Mutex<File>>>);

impl Write for FileWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &self.0 {
            Some(f) => f
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .write(buf),
            None => Ok(buf.len()),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for FileWriter {
    type Writer = FileWriter;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}
