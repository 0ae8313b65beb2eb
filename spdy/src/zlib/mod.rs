//! SPDY/3 header blocks: the name/value layout (32-bit lengths, lowercase names, several
//! values joined by NUL) and its zlib compression with SPDY's preset dictionary — one context
//! per direction for the whole connection, each block ended with a sync flush
//! (docs/reference/kubelet-api.md §5.2).

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// SPDY/3's header dictionary (1423 bytes, Adler-32 `0xE3C6A7C2`), from the SPDY/3 draft as
/// Go's spdystream carries it.
pub const DICTIONARY: &[u8] = include_bytes!("../spdy3_dictionary.bin");

/// Names spdystream refuses in a header block.
const FORBIDDEN: [&str; 4] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
];

/// The most a header block may inflate to: 1 MiB, the bound Go's HTTP server (kubelet's) puts
/// on a request's headers (`http.DefaultMaxHeaderBytes`). A block that inflates past it is
/// refused before more is allocated, so a few compressed bytes cannot claim gigabytes.
pub const MAX_HEADER_BLOCK: usize = 1 << 20;

/// Header names and values, in block order.
pub type Headers = Vec<(String, String)>;

/// The value of header `name` (already lowercase).
pub fn get<'a>(headers: &'a Headers, name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// Why a header block is unusable (the connection must end: the shared context is lost).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// zlib refused the bytes.
    #[error("header block does not inflate: {0}")]
    Inflate(String),
    /// The peer compressed against another dictionary.
    #[error("header block wants dictionary {0:#010x}, not SPDY/3's")]
    Dictionary(u32),
    /// The block inflates past [`MAX_HEADER_BLOCK`].
    #[error("header block inflates past {MAX_HEADER_BLOCK} bytes")]
    TooLarge,
    /// The block is cut short or has bytes left over.
    #[error("header block is malformed")]
    Malformed,
    /// A name with upper-case letters, a forbidden or duplicate name, or non-UTF-8 text.
    #[error("header {0:?} is not allowed")]
    BadName(String),
}

/// Inflates the peer's header blocks.
pub struct Inflater {
    z: Decompress,
}

impl Default for Inflater {
    fn default() -> Self {
        Self {
            z: Decompress::new(true),
        }
    }
}

impl Inflater {
    /// The headers of one compressed block.
    ///
    /// # Errors
    /// [`HeaderError`] for bytes that do not inflate or do not form a header block.
    pub fn headers(&mut self, block: &[u8]) -> Result<Headers, HeaderError> {
        let raw = self.inflate(block)?;
        parse(&raw)
    }

    fn inflate(&mut self, block: &[u8]) -> Result<Vec<u8>, HeaderError> {
        // The buffer never grows past one byte over the bound: a block that fills it is
        // refused.
        const CAP: usize = MAX_HEADER_BLOCK + 1;
        let mut out = Vec::with_capacity(block.len().saturating_mul(4).saturating_add(64).min(CAP));
        let start = self.z.total_in();
        loop {
            let used = usize::try_from(self.z.total_in() - start).unwrap_or(usize::MAX);
            let rest = block.get(used..).ok_or(HeaderError::Malformed)?;
            if out.len() == out.capacity() {
                if out.len() >= CAP {
                    return Err(HeaderError::TooLarge);
                }
                out.reserve_exact(out.capacity().max(256).min(CAP.saturating_sub(out.len())));
            }
            let before = out.len();
            match self.z.decompress_vec(rest, &mut out, FlushDecompress::Sync) {
                Ok(Status::StreamEnd) => return Err(HeaderError::Malformed),
                Ok(_) => {}
                Err(e) => match e.needs_dictionary() {
                    Some(id) if id == adler32(DICTIONARY) => {
                        self.z
                            .set_dictionary(DICTIONARY)
                            .map_err(|e| HeaderError::Inflate(e.to_string()))?;
                        continue;
                    }
                    Some(id) => return Err(HeaderError::Dictionary(id)),
                    None => return Err(HeaderError::Inflate(e.to_string())),
                },
            }
            if out.len() > MAX_HEADER_BLOCK {
                return Err(HeaderError::TooLarge);
            }
            let consumed = self.z.total_in() - start == block.len() as u64;
            if consumed && out.len() < out.capacity() {
                return Ok(out);
            }
            if !consumed && out.len() == before && out.len() < out.capacity() {
                return Err(HeaderError::Malformed);
            }
        }
    }
}

/// Compresses this side's header blocks.
pub struct Deflater {
    z: Compress,
}

impl Default for Deflater {
    fn default() -> Self {
        // Go's spdystream compresses at BestCompression; the dictionary goes in before the
        // first byte, so the block starts `78 F9 E3 C6 A7 C2` as Go's does.
        let mut z = Compress::new(Compression::best(), true);
        let _ = z.set_dictionary(DICTIONARY);
        Self { z }
    }
}

impl Deflater {
    /// One compressed block of `headers`, ending on a sync flush.
    pub fn block(&mut self, headers: &[(&str, &str)]) -> Vec<u8> {
        let raw = serialize(headers);
        let mut out = Vec::with_capacity(raw.len() + 64);
        let start = self.z.total_in();
        loop {
            let used = usize::try_from(self.z.total_in() - start).unwrap_or(usize::MAX);
            let rest = raw.get(used..).unwrap_or_default();
            if out.capacity() - out.len() < 64 {
                out.reserve(256);
            }
            // A compressor with room to write cannot fail.
            let _ = self.z.compress_vec(rest, &mut out, FlushCompress::Sync);
            if self.z.total_in() - start == raw.len() as u64 && out.len() < out.capacity() {
                return out;
            }
        }
    }
}

/// PURE: the uncompressed block: a count, then length-prefixed names and values.
pub fn serialize(headers: &[(&str, &str)]) -> Vec<u8> {
    let mut b = Vec::new();
    let len = |s: &str| u32::try_from(s.len()).unwrap_or(u32::MAX).to_be_bytes();
    b.extend_from_slice(&u32::try_from(headers.len()).unwrap_or(0).to_be_bytes());
    for (n, v) in headers {
        b.extend_from_slice(&len(n));
        b.extend_from_slice(n.as_bytes());
        b.extend_from_slice(&len(v));
        b.extend_from_slice(v.as_bytes());
    }
    b
}

/// PURE: the headers of an uncompressed block, with spdystream's checks.
///
/// # Errors
/// [`HeaderError::Malformed`] for a cut or padded block, [`HeaderError::BadName`] for names
/// spdystream refuses. Duplicates are found through a set, so a block of many names takes time
/// in proportion to their number.
pub fn parse(raw: &[u8]) -> Result<Headers, HeaderError> {
    let mut rest = raw;
    let mut take = |n: usize| -> Result<&[u8], HeaderError> {
        if rest.len() < n {
            return Err(HeaderError::Malformed);
        }
        let (a, b) = rest.split_at(n);
        rest = b;
        Ok(a)
    };
    let u32_of = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
    let count = u32_of(take(4)?);
    let mut headers: Headers = Vec::new();
    let mut names = std::collections::HashSet::<&str>::new();
    for _ in 0..count {
        let n = u32_of(take(4)?);
        let name = take(n)?;
        let v = u32_of(take(4)?);
        let value = take(v)?;
        let name = std::str::from_utf8(name)
            .map_err(|_| HeaderError::BadName(String::from_utf8_lossy(name).into()))?;
        let bad = name.is_empty()
            || name.bytes().any(|c| c.is_ascii_uppercase())
            || FORBIDDEN.contains(&name)
            || !names.insert(name);
        if bad {
            return Err(HeaderError::BadName(name.to_owned()));
        }
        let value = String::from_utf8_lossy(value).into_owned();
        headers.push((name.to_owned(), value));
    }
    if !rest.is_empty() {
        return Err(HeaderError::Malformed);
    }
    Ok(headers)
}

/// Adler-32 (RFC 1950), for the dictionary id.
pub fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &x in data {
        a = (a + u32::from(x)) % 65521;
        b = (b + a) % 65521;
    }
    b << 16 | a
}

#[cfg(test)]
mod tests;
