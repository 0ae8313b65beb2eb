//! The mutator: a few stacked byte-level edits of a base input (bit flips, interesting bytes
//! and integers, inserts, deletes, duplicated ranges, the target's tokens, splices with
//! another input), or now and then an input of random bytes.

use crate::rng::Rng;

/// Bytes that sit on parsers' edges: zero, signs, ASCII digits and separators, high bit.
const BYTES: [u8; 12] = [
    0, 1, 0x7f, 0x80, 0xff, b'0', b'9', b' ', b'\n', b'-', b'.', b'%',
];

/// 32-bit values that sit on length and id edges, written big- or little-endian.
const WORDS: [u32; 8] = [
    0,
    1,
    0x7f,
    0xffff,
    0x00ff_ffff,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
];

/// What the mutator works from.
pub struct Pool<'a> {
    /// Inputs to start from or splice in.
    pub inputs: &'a [Vec<u8>],
    /// The target's tokens.
    pub tokens: &'a [&'a str],
    /// The longest input made.
    pub max_len: usize,
}

/// A new input from `base`.
pub fn mutate(rng: &mut Rng, base: &[u8], pool: &Pool<'_>) -> Vec<u8> {
    if rng.one_in(32) {
        let len = rng.below(pool.max_len.min(256) + 1);
        return (0..len).map(|_| rng.byte()).collect();
    }
    let mut v = base.to_vec();
    let edits = 1 + rng.below(4) + usize::from(rng.one_in(4)) * rng.below(8);
    for _ in 0..edits {
        edit(rng, &mut v, pool);
    }
    v.truncate(pool.max_len);
    v
}

fn edit(rng: &mut Rng, v: &mut Vec<u8>, pool: &Pool<'_>) {
    let at = rng.below(v.len() + 1);
    match rng.below(12) {
        0 if !v.is_empty() => {
            let i = rng.below(v.len());
            v[i] ^= 1 << rng.below(8);
        }
        1 if !v.is_empty() => {
            let i = rng.below(v.len());
            v[i] = rng.byte();
        }
        2 if !v.is_empty() => {
            let i = rng.below(v.len());
            v[i] = BYTES[rng.below(BYTES.len())];
        }
        3 if !v.is_empty() => {
            let i = rng.below(v.len());
            v[i] = v[i].wrapping_add(u8::try_from(rng.below(35)).unwrap_or(0).wrapping_sub(17));
        }
        4 => {
            let w = WORDS[rng.below(WORDS.len())];
            let bytes = if rng.one_in(2) {
                w.to_be_bytes()
            } else {
                w.to_le_bytes()
            };
            let width = [1, 2, 3, 4][rng.below(4)];
            overwrite(v, at, &bytes[4 - width..]);
        }
        5 => {
            let n = 1 + rng.below(16);
            let fresh: Vec<u8> = (0..n).map(|_| rng.byte()).collect();
            v.splice(at..at, fresh);
        }
        6 if !v.is_empty() => {
            let end = (at + 1 + rng.below(32)).min(v.len());
            let start = at.min(end.saturating_sub(1));
            v.drain(start..end);
        }
        7 if !v.is_empty() => {
            let start = rng.below(v.len());
            let end = (start + 1 + rng.below(64)).min(v.len());
            let copy = v[start..end].to_vec();
            for _ in 0..1 + usize::from(rng.one_in(8)) * rng.below(64) {
                v.splice(at..at, copy.iter().copied());
            }
        }
        8 | 9 if !pool.tokens.is_empty() => {
            let t = pool.tokens[rng.below(pool.tokens.len())].as_bytes();
            if rng.one_in(2) {
                v.splice(at..at, t.iter().copied());
            } else {
                overwrite(v, at, t);
            }
        }
        10 if !pool.inputs.is_empty() => {
            let other = &pool.inputs[rng.below(pool.inputs.len())];
            let from = rng.below(other.len() + 1);
            v.truncate(at);
            v.extend_from_slice(&other[from..]);
        }
        _ => v.truncate(at),
    }
}

/// Writes `bytes` at `at`, growing `v` as needed.
fn overwrite(v: &mut Vec<u8>, at: usize, bytes: &[u8]) {
    let end = at + bytes.len();
    if v.len() < end {
        v.resize(end, 0);
    }
    v[at..end].copy_from_slice(bytes);
}

#[cfg(test)]
mod tests;
