//! Wallet deep links of a payment option (issue #50): the standard request a payer's
//! wallet reads from the payment page's QR code or "open in wallet" link, so it fills in
//! the token, the amount and the chain instead of the payer typing them.
//!
//! - EVM tokens: an [EIP-681] `transfer` call of the token contract,
//!   `ethereum:<token>@<chain_id>/transfer?address=<deposit>&uint256=<base units>`.
//!   The chain id is always written (a wallet left to its current network could send the
//!   right token on the wrong chain, where the address is not watched).
//! - Solana: a [Solana Pay] transfer request,
//!   `solana:<deposit>?amount=<decimal>&spl-token=<mint>&reference=<key>`; the amount in
//!   the token's own units (`1.5`, never `1.500000`, never scientific notation).
//! - TRON has no URI standard wallets agree on: its QR code holds the bare address and
//!   the page shows the amount beside it ([`WalletNetwork::Tron`] gives no URI).
//!
//! Everything here is a pure function of its arguments. The decoders exist so the tests
//! can read back what a wallet would read (and check the standards' own examples).
//!
//! [EIP-681]: https://eips.ethereum.org/EIPS/eip-681
//! [Solana Pay]: https://github.com/anza-xyz/solana-pay/blob/master/SPEC.md

use crate::error::{CheckoutError, CheckoutResult};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use stablecoin_core::domain::money::{Micros, Token};
use std::collections::BTreeMap;

/// An ERC-20 `transfer` request of EIP-681.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Eip681Transfer {
    /// The token contract, `0x` hex.
    pub token: String,
    /// The chain id; `None` leaves the wallet on its current network (the standard's
    /// default, never written by the payment page).
    pub chain_id: Option<u64>,
    /// The recipient, `0x` hex: the session's deposit address.
    pub to: String,
    /// The amount in the token's base units (micro-units scaled by its decimals).
    pub amount: u128,
}

/// A Solana Pay transfer request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SolanaPayTransfer {
    /// The recipient's base58 public key (the wallet derives its associated token
    /// account for `spl_token`).
    pub recipient: String,
    /// The amount in the token's units, as written (`"1.5"`); `None` makes the wallet
    /// ask the payer.
    pub amount: Option<String>,
    /// The SPL token mint, base58; `None` is a SOL transfer.
    pub spl_token: Option<String>,
    /// Keys the wallet attaches to the transfer instruction, base58.
    pub references: Vec<String>,
    /// Who asks (shown by the wallet).
    pub label: Option<String>,
    /// What for (shown by the wallet).
    pub message: Option<String>,
    /// Written on chain in an SPL Memo instruction.
    pub memo: Option<String>,
}

fn bad(reason: &str) -> CheckoutError {
    CheckoutError::InvalidParameter {
        field: "uri",
        reason: reason.into(),
    }
}

/// The EIP-681 URI of `t`.
pub fn encode_eip681_transfer(t: &Eip681Transfer) -> String {
    let chain = t.chain_id.map(|c| format!("@{c}")).unwrap_or_default();
    format!(
        "ethereum:{}{chain}/transfer?address={}&uint256={}",
        t.token, t.to, t.amount
    )
}

/// Reads an EIP-681 ERC-20 `transfer` URI (the `pay-` prefix, a chain id, and the
/// standard's scientific notation `1.004e18` accepted). Anything else is refused.
pub fn decode_eip681_transfer(uri: &str) -> CheckoutResult<Eip681Transfer> {
    let rest = uri
        .strip_prefix("ethereum:")
        .ok_or_else(|| bad("not an ethereum: URI"))?;
    let rest = rest.strip_prefix("pay-").unwrap_or(rest);
    let (target, query) = rest
        .split_once("/transfer?")
        .ok_or_else(|| bad("not a transfer call"))?;
    let (token, chain_id) = match target.split_once('@') {
        Some((t, c)) => (
            t,
            Some(c.parse::<u64>().map_err(|_| bad("chain id not a number"))?),
        ),
        None => (target, None),
    };
    if !is_evm_address(token) {
        return Err(bad("token is not a 0x address"));
    }
    let (mut to, mut amount) = (None, None);
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some(("address", v)) => to = Some(v.to_string()),
            Some(("uint256", v)) => amount = Some(parse_eip681_number(v)?),
            _ => {}
        }
    }
    let to = to
        .filter(|a| is_evm_address(a))
        .ok_or_else(|| bad("no address"))?;
    Ok(Eip681Transfer {
        token: token.into(),
        chain_id,
        to,
        amount: amount.ok_or_else(|| bad("no uint256"))?,
    })
}

fn is_evm_address(s: &str) -> bool {
    s.strip_prefix("0x")
        .is_some_and(|h| h.len() == 40 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// An EIP-681 number: digits, or `<digits>[.<digits>]e<digits>` naming an integer.
fn parse_eip681_number(v: &str) -> CheckoutResult<u128> {
    let (mantissa, exp) = match v.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<u32>().map_err(|_| bad("bad exponent"))?),
        None => (v, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() || !(int.bytes().chain(frac.bytes())).all(|b| b.is_ascii_digit()) {
        return Err(bad("not a number"));
    }
    let shift = exp
        .checked_sub(frac.len() as u32)
        .ok_or_else(|| bad("not an integer"))?;
    let digits: u128 = format!("{int}{frac}")
        .parse()
        .map_err(|_| bad("number too large"))?;
    10u128
        .checked_pow(shift)
        .and_then(|p| digits.checked_mul(p))
        .ok_or_else(|| bad("number too large"))
}

/// The Solana Pay URI of `t`: fields in the order of the specification and of its
/// reference `encodeURL` (amount, spl-token, references, label, message, memo), texts
/// percent-encoded as `encodeURIComponent` does.
pub fn encode_solana_pay(t: &SolanaPayTransfer) -> String {
    let mut params: Vec<String> = Vec::new();
    if let Some(a) = &t.amount {
        params.push(format!("amount={a}"));
    }
    if let Some(m) = &t.spl_token {
        params.push(format!("spl-token={m}"));
    }
    for r in &t.references {
        params.push(format!("reference={r}"));
    }
    for (name, v) in [
        ("label", &t.label),
        ("message", &t.message),
        ("memo", &t.memo),
    ] {
        if let Some(v) = v {
            params.push(format!("{name}={}", percent_encode(v)));
        }
    }
    let mut out = format!("solana:{}", t.recipient);
    if !params.is_empty() {
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}

/// Reads a Solana Pay transfer request URI.
pub fn decode_solana_pay(uri: &str) -> CheckoutResult<SolanaPayTransfer> {
    let rest = uri
        .strip_prefix("solana:")
        .ok_or_else(|| bad("not a solana: URI"))?;
    let (recipient, query) = rest.split_once('?').unwrap_or((rest, ""));
    if !is_base58_key(recipient) {
        return Err(bad("recipient is not a base58 public key"));
    }
    let mut t = SolanaPayTransfer {
        recipient: recipient.into(),
        ..Default::default()
    };
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').ok_or_else(|| bad("bad parameter"))?;
        let v = percent_decode(v)?;
        match k {
            "amount" => {
                let ok = !v.is_empty()
                    && !v.starts_with('.')
                    && v.bytes().all(|b| b.is_ascii_digit() || b == b'.')
                    && v.matches('.').count() <= 1;
                if !ok {
                    return Err(bad("amount not a plain decimal"));
                }
                t.amount = Some(v);
            }
            "spl-token" if is_base58_key(&v) => t.spl_token = Some(v),
            "reference" if is_base58_key(&v) => t.references.push(v),
            "label" => t.label = Some(v),
            "message" => t.message = Some(v),
            "memo" => t.memo = Some(v),
            "spl-token" | "reference" => return Err(bad("not a base58 public key")),
            _ => {}
        }
    }
    Ok(t)
}

/// A base58 string of a 32-byte key.
fn is_base58_key(s: &str) -> bool {
    bs58::decode(s).into_vec().is_ok_and(|b| b.len() == 32)
}

/// `encodeURIComponent`: everything but `A-Z a-z 0-9 - _ . ! ~ * ' ( )` as `%XX` of its
/// UTF-8 bytes.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn percent_decode(s: &str) -> CheckoutResult<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3).ok_or_else(|| bad("bad escape"))?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| bad("bad escape"))?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| bad("not UTF-8"))
}

/// Micro-units in base units of a token with `decimals`: exact, or `None` when the
/// token cannot express the amount (fewer than 6 decimals and a remainder).
pub fn base_units(amount: Micros, decimals: u8) -> Option<u128> {
    let micros = u128::from(amount.get());
    if decimals >= 6 {
        10u128
            .checked_pow(u32::from(decimals) - 6)
            .and_then(|p| micros.checked_mul(p))
    } else {
        let p = 10u128.pow(6 - u32::from(decimals));
        (micros % p == 0).then_some(micros / p)
    }
}

/// Micro-units as Solana Pay's decimal amount: no trailing zeros, no trailing point
/// (`25`, `0.01`, `100000.123456`); `None` when the mint's `decimals` cannot express it.
pub fn solana_amount(amount: Micros, decimals: u8) -> Option<String> {
    base_units(amount, decimals)?;
    let s = amount.to_decimal_string();
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    Some(s)
}

/// The Solana Pay `reference` of a session: SHA-256 of a fixed tag and the session id,
/// in base58 (32 bytes, as the specification asks; it need not be a point on the curve).
///
/// Why derived and not drawn: the session id is already unguessable, and a derived key
/// is the same on every node and after a restart without being read back; the session
/// still stores it ([`crate::Session::solana_reference`]) under a unique key, so a scan of
/// transactions by reference (`getSignaturesForAddress`) finds its session in one read.
pub fn solana_reference(session_id: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"stablecoin-checkout/solana-pay-reference/v1\0");
    h.update(session_id.as_bytes());
    bs58::encode(h.finalize()).into_string()
}

/// What the payment page needs to know of a network to write its wallet request: the
/// server fills it from its configuration of the real chains (a simulated chain has no
/// contract a wallet could call, so it has no entry and its QR keeps the bare address).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WalletNetwork {
    /// An EVM chain: its id and each token's contract and decimals.
    Evm {
        /// The chain id (137 Polygon, 8453 Base, ...).
        chain_id: u64,
        /// Token contract (`0x` hex) and decimals, by token.
        tokens: BTreeMap<Token, (String, u8)>,
    },
    /// Solana: each token's mint (base58) and decimals.
    Solana {
        /// Mint and decimals, by token.
        tokens: BTreeMap<Token, (String, u8)>,
    },
    /// TRON: the bare address, with the amount shown beside it.
    Tron,
}

impl WalletNetwork {
    /// The wallet request for paying `amount` of `token` to `address` (the session
    /// `session_id`'s deposit address), or `None` when this network has none (TRON) or
    /// the token is not configured on it.
    pub fn request_uri(
        &self,
        token: Token,
        address: &str,
        amount: Micros,
        session_id: &str,
    ) -> Option<String> {
        match self {
            WalletNetwork::Evm { chain_id, tokens } => {
                let (contract, decimals) = tokens.get(&token)?;
                Some(encode_eip681_transfer(&Eip681Transfer {
                    token: contract.clone(),
                    chain_id: Some(*chain_id),
                    to: address.into(),
                    amount: base_units(amount, *decimals)?,
                }))
            }
            WalletNetwork::Solana { tokens } => {
                let (mint, decimals) = tokens.get(&token)?;
                Some(encode_solana_pay(&SolanaPayTransfer {
                    recipient: address.into(),
                    amount: Some(solana_amount(amount, *decimals)?),
                    spl_token: Some(mint.clone()),
                    references: vec![solana_reference(session_id)],
                    ..Default::default()
                }))
            }
            WalletNetwork::Tron => None,
        }
    }
}

#[cfg(test)]
#[path = "wallet_links_tests.rs"]
mod tests;
