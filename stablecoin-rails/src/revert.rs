//! The reason inside a Solidity revert, shared by the EVM and TRON rails (TRON's TVM
//! returns the same `Error(string)` / `Panic(uint256)` encodings in `contractResult`).

/// `Error(string)`.
const ERROR_SELECTOR: [u8; 4] = [0x08, 0xc3, 0x79, 0xa0];
/// `Panic(uint256)`.
const PANIC_SELECTOR: [u8; 4] = [0x4e, 0x48, 0x7b, 0x71];

fn word_usize(data: &[u8], at: usize) -> Option<usize> {
    let w = data.get(at..at.checked_add(32)?)?;
    if w[..24].iter().any(|b| *b != 0) {
        return None;
    }
    usize::try_from(u64::from_be_bytes(w[24..].try_into().ok()?)).ok()
}

/// The revert reason of `data`: the message of `Error(string)`, `panic 0x..` for
/// `Panic(uint256)`, a fixed text for empty data, the hex of anything else.
pub fn reason(data: &[u8]) -> String {
    if data.len() >= 4 && data[..4] == ERROR_SELECTOR {
        let body = &data[4..];
        let text = word_usize(body, 0).and_then(|offset| {
            let len = word_usize(body, offset)?;
            let start = offset.checked_add(32)?;
            body.get(start..start.checked_add(len)?)
        });
        if let Some(text) = text {
            return String::from_utf8_lossy(text).into_owned();
        }
    }
    if data.len() == 36 && data[..4] == PANIC_SELECTOR {
        let low: [u8; 16] = data[20..36].try_into().unwrap_or([0; 16]);
        return format!("panic 0x{:x}", u128::from_be_bytes(low));
    }
    if data.is_empty() {
        return "reverted without a reason".into();
    }
    format!("reverted: 0x{}", hex::encode(data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_error_string_panic_and_raw_data() {
        // Error("insufficient balance"), as solc encodes it.
        let mut data = ERROR_SELECTOR.to_vec();
        let mut w = [0u8; 32];
        w[31] = 0x20;
        data.extend_from_slice(&w);
        w[31] = 20;
        data.extend_from_slice(&w);
        let mut text = b"insufficient balance".to_vec();
        text.resize(32, 0);
        data.extend_from_slice(&text);
        assert_eq!(reason(&data), "insufficient balance");
        let mut panic = PANIC_SELECTOR.to_vec();
        let mut code = [0u8; 32];
        code[31] = 0x11;
        panic.extend_from_slice(&code);
        assert_eq!(reason(&panic), "panic 0x11");
        assert_eq!(reason(&[]), "reverted without a reason");
        assert_eq!(reason(&[0xde, 0xad]), "reverted: 0xdead");
        // A truncated Error(string) is shown raw, not read out of bounds.
        assert!(reason(&data[..40]).starts_with("reverted: 0x08c379a0"));
    }
}
