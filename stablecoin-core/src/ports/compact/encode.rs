//! JSON text to the compact form.

use super::{
    CROCKFORD, DICT_INDEX, FORMAT, HashMap, T_ARR, T_DICT, T_END, T_FALSE, T_HEX, T_NINT, T_NULL,
    T_OBJ, T_PARTS, T_REF, T_STR, T_TRUE, T_UINT, T_ULID,
};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

/// The compact form of a JSON text, or `None` when it is not one the format takes
/// (the body is then stored as text).
pub fn encode(json: &str) -> Option<Vec<u8>> {
    let mut enc = Encoder::new(json.len() / 2 + 8);
    let mut de = serde_json::Deserializer::from_str(json);
    Sink(&mut enc).deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(enc.out)
}

/// The writer both ways in share: from JSON text (here) and from a typed value
/// (`super::ser`).
pub(super) struct Encoder {
    pub(super) out: Vec<u8>,
    /// Strings written so far (raw, hex or ULID), numbered in order. FxHash, not the
    /// standard SipHash: every string of every body written is looked up here and in
    /// `DICT_INDEX`, and SipHash's DoS resistance buys nothing for keys that are the
    /// service's own record fields, bounded by one body (SipHash was ~3% of the
    /// settlement worker's CPU per transfer, issue 47).
    seen: HashMap<String, u32>,
}

impl Encoder {
    /// An encoder that has written the format byte.
    pub(super) fn new(capacity: usize) -> Self {
        let mut out = Vec::with_capacity(capacity);
        out.push(FORMAT);
        Encoder {
            out,
            seen: HashMap::default(),
        }
    }

    pub(super) fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.out.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
    }

    pub(super) fn uint(&mut self, v: u64) {
        self.out.push(T_UINT);
        self.varint(v);
    }

    pub(super) fn int(&mut self, v: i64) {
        match u64::try_from(v) {
            Ok(u) => self.uint(u),
            Err(_) => {
                self.out.push(T_NINT);
                // -1 -> 0, -2 -> 1, ...
                self.varint(!(v as u64));
            }
        }
    }

    /// One string item. `parts`: a `a:b` name may be written as its parts (not inside
    /// one: parts never split again).
    pub(super) fn string(&mut self, s: &str, parts: bool) {
        if let Some(i) = DICT_INDEX.get(s) {
            self.out.extend([T_DICT, *i]);
            return;
        }
        if let Some(i) = self.seen.get(s) {
            let i = *i;
            self.out.push(T_REF);
            self.varint(u64::from(i));
            return;
        }
        if parts && let Some(split) = known_parts(s, self) {
            self.out.push(T_PARTS);
            self.out.push(split.len() as u8);
            for p in split {
                self.string(p, false);
            }
            return;
        }
        if let Some(bytes) = hex_bytes(s) {
            self.out.extend([T_HEX, bytes.len() as u8]);
            self.out.extend(bytes);
        } else if let Some((prefix, ulid)) = ulid_of(s) {
            self.out.push(T_ULID);
            self.string(prefix, false);
            self.out.extend(ulid.to_be_bytes());
        } else {
            self.out.push(T_STR);
            self.varint(s.len() as u64);
            self.out.extend(s.as_bytes());
        }
        let n = u32::try_from(self.seen.len()).unwrap_or(u32::MAX);
        self.seen.insert(s.to_owned(), n);
    }
}

/// The parts of `a:b[:c...]` when worth writing apart: 2 to 16 non-empty parts, the
/// first of which is already known (in `DICT`, met before, or an id).
fn known_parts<'s>(s: &'s str, enc: &Encoder) -> Option<Vec<&'s str>> {
    if s.len() < 8 || !s.contains(':') {
        return None;
    }
    let split: Vec<&str> = s.split(':').collect();
    if split.len() > 16 || split.iter().any(|p| p.is_empty()) {
        return None;
    }
    let first = split[0];
    let known =
        DICT_INDEX.contains_key(first) || enc.seen.contains_key(first) || ulid_of(first).is_some();
    known.then_some(split)
}

/// `0x` + an even number (2 to 510) of lowercase hex digits, as bytes.
fn hex_bytes(s: &str) -> Option<Vec<u8>> {
    let digits = s.strip_prefix("0x")?.as_bytes();
    if digits.is_empty() || digits.len() % 2 != 0 || digits.len() > 510 {
        return None;
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    digits
        .chunks(2)
        .map(|p| Some(nibble(p[0])? << 4 | nibble(p[1])?))
        .collect()
}

/// `prefix_` (1 to 16 bytes, ending in `_`) + a 26-character ULID, as the prefix and
/// the ULID's 128 bits.
fn ulid_of(s: &str) -> Option<(&str, u128)> {
    let cut = s.len().checked_sub(26)?;
    if !(1..=16).contains(&cut) || !s.is_char_boundary(cut) {
        return None;
    }
    let (prefix, tail) = s.split_at(cut);
    if !prefix.ends_with('_') || tail.as_bytes()[0] > b'7' {
        return None;
    }
    let mut v: u128 = 0;
    for c in tail.bytes() {
        let d = CROCKFORD.iter().position(|x| *x == c)?;
        v = (v << 5) | d as u128;
    }
    Some((prefix, v))
}

/// Deserializes one JSON value into the encoder.
struct Sink<'a>(&'a mut Encoder);

impl<'de> DeserializeSeed<'de> for Sink<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Sink<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.0.out.push(T_NULL);
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.0.out.push(if v { T_TRUE } else { T_FALSE });
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.0.uint(v);
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.0.int(v);
        Ok(())
    }
    /// Not encoded: the body stays text. serde_json hands over as an `f64` both a
    /// fraction and an integer beyond 64 bits (a `u128` such as a sponsorship budget's
    /// wei), and an `f64` keeps neither exactly: `20000000000000000001` would come back
    /// `20000000000000000000.0`. Money is never a float here, so such bodies are rare and
    /// keep their exact text. (The decoder still reads `T_F64`, which format 1 wrote.)
    fn visit_f64<E: de::Error>(self, _v: f64) -> Result<(), E> {
        Err(E::custom("a number beyond 64-bit integers stays text"))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.0.string(v, true);
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.0.out.push(T_ARR);
        while seq.next_element_seed(Sink(&mut *self.0))?.is_some() {}
        self.0.out.push(T_END);
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.0.out.push(T_OBJ);
        while map.next_key_seed(Key(&mut *self.0))?.is_some() {
            map.next_value_seed(Sink(&mut *self.0))?;
        }
        self.0.out.push(T_END);
        Ok(())
    }
}

/// An object's key.
struct Key<'a>(&'a mut Encoder);

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        // serde_json's private number and raw-value maps (features this workspace does
        // not enable) would not round-trip: such a body stays text.
        if v.starts_with("$serde_json::private::") {
            return Err(E::custom("private serde_json key"));
        }
        self.0.string(v, true);
        Ok(())
    }
}
