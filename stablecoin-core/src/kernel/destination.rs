//! The form of a destination address the service sends to from its own custody (staff
//! returns of stray deposits, checkout refunds): one rule, so every product refuses the
//! same malformed addresses.

/// `Err(reason)` when `to` is not an address of `rail`'s form: `0x` and 40 hex digits
/// (EVM), base58 of 34 characters starting with `T` (TRON), base58 of 32 to 44
/// characters (Solana).
pub fn check_address_form(rail: &str, to: &str) -> Result<(), String> {
    const B58: &str = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
    let b58 = |s: &str| s.chars().all(|c| B58.contains(c));
    let ok = match rail {
        "tron" => to.len() == 34 && to.starts_with('T') && b58(to),
        "solana" => (32..=44).contains(&to.len()) && b58(to),
        _ => {
            to.len() == 42 && to.starts_with("0x") && to[2..].bytes().all(|b| b.is_ascii_hexdigit())
        }
    };
    if ok {
        Ok(())
    } else {
        Err(format!("not an address of {rail}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rail_takes_its_own_form_only() {
        let evm = "0x00000000000000000000000000000000000000aa";
        let tron = "TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7";
        assert!(check_address_form("polygon", evm).is_ok());
        assert!(check_address_form("polygon", tron).is_err());
        assert!(check_address_form("tron", tron).is_ok());
        assert!(check_address_form("tron", evm).is_err());
        assert!(check_address_form("polygon", "0x00").is_err());
        assert!(check_address_form("solana", "11111111111111111111111111111111").is_ok());
        assert!(check_address_form("solana", "0OIl0OIl0OIl0OIl0OIl0OIl0OIl0OIl").is_err());
    }
}
