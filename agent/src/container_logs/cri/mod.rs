//! The CRI container log format, one record a line:
//! `<RFC 3339 timestamp> <stdout|stderr> <F|P> <content>\n`. `F` ends a line of output, `P` is a
//! piece of a longer one, continued by the next record. Lines longer than [`MAX_CHUNK`] are cut
//! into pieces as kubelet's runtimes cut them. Pure: formatting, parsing and cutting only.
//!
//! The agent's own output (`tart run`'s log) goes on `stderr` with every line's content
//! starting with [`TART_PREFIX`], so `kubectl logs` shows it beside the guest's output, clearly
//! apart from it.

use k8s_openapi::jiff::{Timestamp, tz::Offset};

/// The longest content of one record; a longer line is cut into `P` records of this size.
pub(crate) const MAX_CHUNK: usize = 16 * 1024;

/// Content prefix of each line of `tart run`'s output.
pub(crate) const TART_PREFIX: &[u8] = b"[tart] ";

/// Which output stream a record came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    /// The word in a record.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Stdout => "stdout",
            Self::Stderr => "stderr",
        }
    }

    fn parse(word: &[u8]) -> Option<Self> {
        match word {
            b"stdout" => Some(Self::Stdout),
            b"stderr" => Some(Self::Stderr),
            _ => None,
        }
    }
}

/// Whether a record ends its line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Tag {
    /// `F`: the line ends here.
    Full,
    /// `P`: the line continues in the next record.
    Partial,
}

impl Tag {
    /// The letter in a record.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Full => "F",
            Self::Partial => "P",
        }
    }
}

/// One parsed record; `content` never holds the newline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record<'a> {
    pub time: Timestamp,
    pub stream: Stream,
    pub tag: Tag,
    pub content: &'a [u8],
}

/// Why a line is not a CRI record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ParseError {
    #[error("log record has no timestamp")]
    MissingTimestamp,
    #[error("log record timestamp is not RFC 3339")]
    BadTimestamp,
    #[error("log record has no stream")]
    MissingStream,
    #[error("log record stream is neither stdout nor stderr")]
    BadStream,
    #[error("log record has no tag")]
    MissingTag,
}

/// `time` in kubelet's `RFC3339NanoFixed` layout, in UTC: always nine fractional digits.
pub(crate) fn format_time(time: Timestamp) -> String {
    let t = Offset::UTC.to_datetime(time);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:09}Z",
        t.year(),
        t.month(),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.subsec_nanosecond()
    )
}

/// Append one record to `out`. `content` must not hold a newline.
pub(crate) fn encode(out: &mut Vec<u8>, time: &str, stream: Stream, tag: Tag, content: &[u8]) {
    out.extend_from_slice(time.as_bytes());
    out.push(b' ');
    out.extend_from_slice(stream.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(tag.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(content);
    out.push(b'\n');
}

/// Append `piece` of a line as records of at most [`MAX_CHUNK`] bytes: every record `P` but
/// the last, which is `F` when `ends_line`. An empty piece that ends its line is one empty
/// `F` record; an empty piece that does not writes nothing.
pub(crate) fn encode_piece(
    out: &mut Vec<u8>,
    time: &str,
    stream: Stream,
    piece: &[u8],
    ends_line: bool,
) {
    if piece.is_empty() {
        if ends_line {
            encode(out, time, stream, Tag::Full, piece);
        }
        return;
    }
    let mut chunks = piece.chunks(MAX_CHUNK).peekable();
    while let Some(chunk) = chunks.next() {
        let last = chunks.peek().is_none();
        let tag = if last && ends_line {
            Tag::Full
        } else {
            Tag::Partial
        };
        encode(out, time, stream, tag, chunk);
    }
}

/// Parse one record, `line` without its newline. As kubelet does, only the first of
/// `:`-separated tags counts and anything but `P` ends the line.
///
/// # Errors
/// [`ParseError`] names the first field that is missing or malformed.
pub(crate) fn parse(line: &[u8]) -> Result<Record<'_>, ParseError> {
    let (time, rest) = split_word(line).ok_or(ParseError::MissingTimestamp)?;
    let time = std::str::from_utf8(time)
        .ok()
        .and_then(|t| t.parse::<Timestamp>().ok())
        .ok_or(ParseError::BadTimestamp)?;
    let (stream, rest) = split_word(rest).ok_or(ParseError::MissingStream)?;
    let stream = Stream::parse(stream).ok_or(ParseError::BadStream)?;
    let (tags, content) = split_word(rest).ok_or(ParseError::MissingTag)?;
    let first = tags.split(|b| *b == b':').next().unwrap_or_default();
    let tag = if first == b"P" {
        Tag::Partial
    } else {
        Tag::Full
    };
    Ok(Record {
        time,
        stream,
        tag,
        content,
    })
}

fn split_word(s: &[u8]) -> Option<(&[u8], &[u8])> {
    let i = s.iter().position(|b| *b == b' ')?;
    Some((&s[..i], &s[i + 1..]))
}

#[cfg(test)]
mod tests;
