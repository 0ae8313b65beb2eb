//! What `kubectl logs` receives for each CRI record, kubelet's rules: the content only, a
//! partial line joined to the rest of it, the record's time in front of each line when
//! `timestamps` is asked, records before `since` skipped, and output cut at `limitBytes`
//! (counted after the time prefix; the record that crosses the limit is cut and the stream
//! ends). Pure.

use k8s_openapi::jiff::Timestamp;

use super::cri::{self, Tag};

pub(crate) use crate::kubelet_api::logs::LogQuery;

/// Whether more output may follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    More,
    /// `limitBytes` is reached: the stream ends.
    Done,
}

/// Turns records into output.
#[derive(Debug, Clone)]
pub(crate) struct Formatter {
    timestamps: bool,
    since: Option<Timestamp>,
    remain: Option<u64>,
    at_line_start: bool,
}

impl Formatter {
    /// A formatter for `query`, with `since` taken at `now`.
    pub(crate) fn new(query: &LogQuery, now: Timestamp) -> Self {
        Self {
            timestamps: query.timestamps,
            since: query.since(now),
            remain: query.limit_bytes,
            at_line_start: true,
        }
    }

    /// Append the output of one record (`line` without its newline) to `out`. A line that is
    /// not a CRI record is skipped, as kubelet skips it.
    pub(crate) fn push(&mut self, line: &[u8], out: &mut Vec<u8>) -> Flow {
        if self.remain == Some(0) {
            return Flow::Done;
        }
        let Ok(rec) = cri::parse(line) else {
            return Flow::More;
        };
        let prefix = self.at_line_start;
        self.at_line_start = rec.tag == Tag::Full;
        if self.since.is_some_and(|s| rec.time < s) {
            return Flow::More;
        }
        let start = out.len();
        if self.timestamps && prefix {
            out.extend_from_slice(cri::format_time(rec.time).as_bytes());
            out.push(b' ');
        }
        out.extend_from_slice(rec.content);
        if rec.tag == Tag::Full {
            out.push(b'\n');
        }
        let Some(remain) = self.remain.as_mut() else {
            return Flow::More;
        };
        let written = (out.len() - start) as u64;
        if written < *remain {
            *remain -= written;
            return Flow::More;
        }
        out.truncate(start + usize::try_from(*remain).unwrap_or(usize::MAX));
        *remain = 0;
        Flow::Done
    }
}

#[cfg(test)]
mod tests;
