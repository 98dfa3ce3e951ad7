//! The compact form back to the JSON text it was encoded from.

use super::reader::{Corrupt, MAX_DEPTH, Reader, Str};
use super::{FORMAT, T_ARR, T_END, T_F64, T_FALSE, T_NINT, T_NULL, T_OBJ, T_TRUE, T_UINT};
use std::fmt::Write as _;

/// The JSON text of a compact body, as `serde_json::to_string` wrote it (same key
/// order, same escaping); `Err` names what is corrupt.
pub fn to_text(bytes: &[u8]) -> Result<String, String> {
    match bytes.first() {
        Some(&FORMAT) => {}
        other => return Err(format!("compact body of unknown format {other:?}")),
    }
    let mut d = TextWriter {
        r: Reader::new(bytes),
        out: String::with_capacity(bytes.len() * 2 + 16),
    };
    let corrupt = |_: Corrupt| "compact body: truncated or corrupt".to_string();
    d.value(0).map_err(corrupt)?;
    if !d.r.at_end() {
        return Err("compact body: trailing bytes".into());
    }
    Ok(d.out)
}

struct TextWriter<'b> {
    r: Reader<'b>,
    out: String,
}

impl TextWriter<'_> {
    fn value(&mut self, depth: usize) -> Result<(), Corrupt> {
        if depth > MAX_DEPTH {
            return Err(Corrupt);
        }
        let tag = self.r.byte()?;
        match tag {
            T_NULL => self.out.push_str("null"),
            T_FALSE => self.out.push_str("false"),
            T_TRUE => self.out.push_str("true"),
            T_UINT => {
                let v = self.r.varint()?;
                let _ = write!(self.out, "{v}");
            }
            T_NINT => {
                let v = -i128::from(self.r.varint()?) - 1;
                let _ = write!(self.out, "{v}");
            }
            T_F64 => {
                let raw: [u8; 8] = self.r.take(8)?.try_into().map_err(|_| Corrupt)?;
                let n = serde_json::Number::from_f64(f64::from_le_bytes(raw)).ok_or(Corrupt)?;
                let _ = write!(self.out, "{n}");
            }
            T_ARR => {
                self.out.push('[');
                let mut first = true;
                while self.r.peek() != Some(T_END) {
                    if !first {
                        self.out.push(',');
                    }
                    first = false;
                    self.value(depth + 1)?;
                }
                self.r.pos += 1;
                self.out.push(']');
            }
            T_OBJ => {
                self.out.push('{');
                let mut first = true;
                while self.r.peek() != Some(T_END) {
                    if !first {
                        self.out.push(',');
                    }
                    first = false;
                    let tag = self.r.byte()?;
                    let key = self.r.string(tag, true)?;
                    self.quoted(&key);
                    self.out.push(':');
                    self.value(depth + 1)?;
                }
                self.r.pos += 1;
                self.out.push('}');
            }
            tag => {
                let s = self.r.string(tag, true)?;
                self.quoted(&s);
            }
        }
        Ok(())
    }

    /// Appends `s` as a JSON string, escaped as serde_json escapes it (`"`, `\\` and
    /// control characters; nothing else).
    fn quoted(&mut self, s: &Str) {
        let text = self.r.text(s);
        if text.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
            self.out.push('"');
            self.out.push_str(text);
            self.out.push('"');
        } else if let Ok(escaped) = serde_json::to_string(text) {
            self.out.push_str(&escaped);
        }
    }
}
