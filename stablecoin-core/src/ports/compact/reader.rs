//! Reading a compact body item by item: what the text decoder ([`super::to_text`]) and
//! the typed one ([`super::from_slice`]) share.

use super::{CROCKFORD, DICT, T_DICT, T_HEX, T_PARTS, T_REF, T_STR, T_ULID};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Nesting deeper than serde_json's own limit (128) cannot have been written.
pub(super) const MAX_DEPTH: usize = 256;

/// A truncated or corrupt body (each decoder says it in its own error type).
#[derive(Debug)]
pub(super) struct Corrupt;

/// A decoded string: a dictionary entry, one of the body's strings met so far, or the
/// parts of a name joined (no string is copied until it is needed).
pub(super) enum Str {
    Dict(&'static str),
    Seen(usize),
    Joined(String),
}

/// A string met before, for back-references: a plain string is read in place (its
/// bytes, checked UTF-8 once), a hex or ULID one is built once.
enum Seen<'b> {
    Raw(&'b str),
    Built(String),
}

pub(super) struct Reader<'b> {
    bytes: &'b [u8],
    pub(super) pos: usize,
    seen: Vec<Seen<'b>>,
}

impl<'b> Reader<'b> {
    /// A reader after the format byte (the caller checked it).
    pub(super) fn new(bytes: &'b [u8]) -> Self {
        Reader {
            bytes,
            pos: 1,
            // An operation's body has ~16 distinct strings.
            seen: Vec::with_capacity(16),
        }
    }

    pub(super) fn at_end(&self) -> bool {
        self.pos == self.bytes.len()
    }

    pub(super) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    pub(super) fn byte(&mut self) -> Result<u8, Corrupt> {
        let b = *self.bytes.get(self.pos).ok_or(Corrupt)?;
        self.pos += 1;
        Ok(b)
    }

    pub(super) fn take(&mut self, n: usize) -> Result<&'b [u8], Corrupt> {
        let end = self.pos.checked_add(n).ok_or(Corrupt)?;
        let s = self.bytes.get(self.pos..end).ok_or(Corrupt)?;
        self.pos = end;
        Ok(s)
    }

    pub(super) fn varint(&mut self) -> Result<u64, Corrupt> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(Corrupt)
    }

    /// One string item whose tag was read (the mirror of the encoder's `string`).
    /// `parts`: whether a `a:b` name may come as its parts (not inside one).
    pub(super) fn string(&mut self, tag: u8, parts: bool) -> Result<Str, Corrupt> {
        let seen = match tag {
            T_DICT => {
                let i = self.byte()?;
                return DICT
                    .get(usize::from(i))
                    .map(|s| Str::Dict(s))
                    .ok_or(Corrupt);
            }
            T_REF => {
                let i = usize::try_from(self.varint()?).map_err(|_| Corrupt)?;
                return if i < self.seen.len() {
                    Ok(Str::Seen(i))
                } else {
                    Err(Corrupt)
                };
            }
            T_PARTS if parts => {
                let n = self.byte()?;
                let mut joined = String::new();
                for i in 0..n {
                    if i > 0 {
                        joined.push(':');
                    }
                    let tag = self.byte()?;
                    let part = self.string(tag, false)?;
                    joined.push_str(self.text(&part));
                }
                return Ok(Str::Joined(joined));
            }
            T_HEX => {
                let n = usize::from(self.byte()?);
                let bytes = self.take(n)?;
                let mut s = String::with_capacity(2 + 2 * n);
                s.push_str("0x");
                for b in bytes {
                    s.push(char::from(HEX[usize::from(b >> 4)]));
                    s.push(char::from(HEX[usize::from(b & 15)]));
                }
                Seen::Built(s)
            }
            T_ULID => {
                let tag = self.byte()?;
                let prefix = self.string(tag, false)?;
                let mut s = String::with_capacity(42);
                s.push_str(self.text(&prefix));
                let raw: [u8; 16] = self.take(16)?.try_into().map_err(|_| Corrupt)?;
                let v = u128::from_be_bytes(raw);
                for i in (0..26).rev() {
                    s.push(char::from(CROCKFORD[((v >> (5 * i)) & 31) as usize]));
                }
                Seen::Built(s)
            }
            T_STR => {
                let n = usize::try_from(self.varint()?).map_err(|_| Corrupt)?;
                Seen::Raw(std::str::from_utf8(self.take(n)?).map_err(|_| Corrupt)?)
            }
            _ => return Err(Corrupt),
        };
        self.seen.push(seen);
        Ok(Str::Seen(self.seen.len() - 1))
    }

    /// The text of a string item read by this reader.
    pub(super) fn text<'s>(&'s self, s: &'s Str) -> &'s str {
        match s {
            Str::Dict(d) => d,
            Str::Joined(j) => j,
            Str::Seen(i) => match &self.seen[*i] {
                Seen::Built(b) => b,
                Seen::Raw(r) => r,
            },
        }
    }
}
