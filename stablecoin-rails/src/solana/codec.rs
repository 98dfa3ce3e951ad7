//! Pure, synchronous Solana encoding: addresses, associated token account (ATA)
//! derivation, the provisioning and transfer instructions, message compilation and the
//! signed wire format. No I/O: every function here is checked against fixtures produced
//! by independent implementations (`tests/fixtures/solana/`).

use solana_hash::Hash;
use solana_instruction::Instruction;
use solana_message::Message;
use solana_program_pack::Pack;
use solana_pubkey::Pubkey;
use spl_associated_token_account_interface::{address, instruction as ata_ix};
use spl_token_interface::state::{Account as TokenAccount, AccountState, Mint};
use std::str::FromStr;

/// The SPL Token program (`Tokenkeg...`): USDC and USDT on Solana mainnet use it.
pub const TOKEN_PROGRAM_ID: Pubkey = spl_token_interface::ID;
/// The Associated Token Account program.
pub const ASSOCIATED_TOKEN_PROGRAM_ID: Pubkey = spl_associated_token_account_interface::program::ID;
/// The System program.
pub const SYSTEM_PROGRAM_ID: Pubkey = Pubkey::from_str_const("11111111111111111111111111111111");
/// The wrapped-SOL mint: native SOL in token form. Refused like native SOL.
pub const NATIVE_MINT: Pubkey = spl_token_interface::native_mint::ID;
/// Circle's USDC mint on Solana mainnet.
pub const MAINNET_USDC_MINT: Pubkey =
    Pubkey::from_str_const("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v");
/// Tether's USDT mint on Solana mainnet.
pub const MAINNET_USDT_MINT: Pubkey =
    Pubkey::from_str_const("Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB");
/// Size of an SPL token account (rent is paid for this many bytes).
pub const TOKEN_ACCOUNT_LEN: usize = TokenAccount::LEN;
/// Size of an SPL mint account.
pub const MINT_LEN: usize = Mint::LEN;
/// Base fee per signature, in lamports (the validator's default fee structure).
pub const LAMPORTS_PER_SIGNATURE: u64 = 5_000;
/// Largest legacy transaction on the wire.
pub const PACKET_DATA_SIZE: usize = 1232;
/// The Compute Budget program: a transaction's compute-unit limit and price (its
/// priority fee) are instructions to it.
pub const COMPUTE_BUDGET_PROGRAM_ID: Pubkey =
    Pubkey::from_str_const("ComputeBudget111111111111111111111111111111");
/// The most compute units one transaction may request.
pub const MAX_COMPUTE_UNIT_LIMIT: u32 = 1_400_000;
/// The SPL Memo program, v2 (`MemoSq4...`): every payment send carries its payment id in
/// a memo, so two payments alike in sender, recipient, amount and mint are never one
/// transaction (same bytes under one blockhash would be one signature: the node keeps
/// one, the ledger would record two).
pub const MEMO_PROGRAM_ID: Pubkey =
    Pubkey::from_str_const("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr");
/// The longest memo the rail writes, in bytes: payment ids are far shorter (a prefix and
/// a ULID), and the bound keeps the transaction's size and the memo's compute units
/// small and known.
pub const MAX_MEMO_BYTES: usize = 128;

/// Why an input could not be encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CodecError {
    /// Not a Solana address, or not one usable here (an off-curve address given as a
    /// wallet); the rail answers `InvalidAddress`.
    InvalidAddress {
        /// The address as given (at most 64 characters).
        address: String,
        /// Why, in words for the caller.
        reason: String,
    },
    /// Any other input that cannot be encoded (a size limit, a bad instruction
    /// argument); the rail answers `Rejected`.
    Invalid(String),
}

impl std::fmt::Display for CodecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CodecError::InvalidAddress { address, reason } => {
                write!(f, "invalid address {address:?}: {reason}")
            }
            CodecError::Invalid(r) => f.write_str(r),
        }
    }
}

impl std::error::Error for CodecError {}

/// Parses a base58 account address strictly: exactly 32 bytes, and the canonical text
/// form (so two spellings never name one account).
pub fn parse_address(text: &str) -> Result<Pubkey, CodecError> {
    let bad = |reason: &str| CodecError::InvalidAddress {
        address: text.chars().take(64).collect(),
        reason: reason.to_string(),
    };
    if text.is_empty() || text.len() > 44 {
        return Err(bad(
            "a Solana address is 32 bytes in base58 (32 to 44 characters)",
        ));
    }
    let key = Pubkey::from_str(text).map_err(|_| bad("not base58 of 32 bytes"))?;
    if key.to_string() != text {
        return Err(bad("not the canonical base58 form"));
    }
    Ok(key)
}

/// The account address of an ed25519 public key: the key itself.
pub fn address_from_public_key(public_key: &[u8]) -> Result<Pubkey, CodecError> {
    let bytes: [u8; 32] = public_key.try_into().map_err(|_| {
        CodecError::Invalid(format!(
            "an ed25519 public key is 32 bytes, got {}",
            public_key.len()
        ))
    })?;
    Ok(Pubkey::new_from_array(bytes))
}

/// A wallet (owner) address must be an ed25519 point: an off-curve address is a program
/// derived address (for instance a token account), and tokens sent to its ATA could
/// never move again.
pub fn check_wallet_address(key: &Pubkey) -> Result<(), CodecError> {
    if key.is_on_curve() {
        Ok(())
    } else {
        Err(CodecError::InvalidAddress {
            address: key.to_string(),
            reason: "off-curve address (a program-derived or token account address), not a \
                     wallet: send to the owner's wallet address"
                .into(),
        })
    }
}

/// The associated token account of `owner` for `mint` under `token_program`.
pub fn associated_token_address(owner: &Pubkey, mint: &Pubkey, token_program: &Pubkey) -> Pubkey {
    address::get_associated_token_address_with_program_id(owner, mint, token_program)
}

/// `CreateIdempotent` of the ATA of `owner` for `mint`, paid (rent and fee) by `payer`.
pub fn create_ata_idempotent(
    payer: &Pubkey,
    owner: &Pubkey,
    mint: &Pubkey,
    token_program: &Pubkey,
) -> Instruction {
    ata_ix::create_associated_token_account_idempotent(payer, owner, mint, token_program)
}

/// Provisioning: one `CreateIdempotent` per mint, in the given order, all paid by
/// `fee_payer`. The owner does not sign (the ATA program needs only the funder).
pub fn provision_instructions(
    fee_payer: &Pubkey,
    owner: &Pubkey,
    mints: &[Pubkey],
    token_program: &Pubkey,
) -> Vec<Instruction> {
    mints
        .iter()
        .map(|m| create_ata_idempotent(fee_payer, owner, m, token_program))
        .collect()
}

/// One credit of an outbound transfer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransferLeg {
    /// The recipient's wallet (owner) address; the tokens go to its ATA.
    pub recipient: Pubkey,
    /// Base units.
    pub amount: u64,
    /// Prepend a `CreateIdempotent` of the recipient's ATA (paid by the fee payer).
    pub create_recipient_ata: bool,
}

/// The instructions of a sponsored SPL transfer: for each leg, optionally the
/// recipient's `CreateIdempotent` (payer = fee payer), then `TransferChecked` from the
/// source owner's ATA with the source owner as the token authority.
pub fn transfer_instructions(
    fee_payer: &Pubkey,
    source_owner: &Pubkey,
    mint: &Pubkey,
    token_program: &Pubkey,
    decimals: u8,
    legs: &[TransferLeg],
) -> Result<Vec<Instruction>, CodecError> {
    if legs.is_empty() {
        return Err(CodecError::Invalid(
            "a transfer needs at least one leg".into(),
        ));
    }
    let source_ata = associated_token_address(source_owner, mint, token_program);
    let mut out = Vec::with_capacity(legs.len() * 2);
    for leg in legs {
        if leg.amount == 0 {
            return Err(CodecError::Invalid(
                "every leg amount must be positive".into(),
            ));
        }
        let dest_ata = associated_token_address(&leg.recipient, mint, token_program);
        if dest_ata == source_ata {
            return Err(CodecError::Invalid(
                "a leg pays the source account itself".into(),
            ));
        }
        if leg.create_recipient_ata {
            out.push(create_ata_idempotent(
                fee_payer,
                &leg.recipient,
                mint,
                token_program,
            ));
        }
        let ix = spl_token_interface::instruction::transfer_checked(
            token_program,
            &source_ata,
            mint,
            &dest_ata,
            source_owner,
            &[],
            leg.amount,
            decimals,
        )
        .map_err(|e| CodecError::Invalid(format!("transfer_checked: {e}")))?;
        out.push(ix);
    }
    Ok(out)
}

/// A Memo v2 instruction carrying `text` (its UTF-8 bytes are the data). No accounts:
/// the program then requires no signer, and it only logs the text. Refuses an empty
/// text and one over [`MAX_MEMO_BYTES`].
pub fn memo(text: &str) -> Result<Instruction, CodecError> {
    if text.is_empty() {
        return Err(CodecError::Invalid("a memo must not be empty".into()));
    }
    if text.len() > MAX_MEMO_BYTES {
        return Err(CodecError::Invalid(format!(
            "a memo is at most {MAX_MEMO_BYTES} bytes, got {}",
            text.len()
        )));
    }
    Ok(Instruction {
        program_id: MEMO_PROGRAM_ID,
        accounts: vec![],
        data: text.as_bytes().to_vec(),
    })
}

/// `SetComputeUnitLimit`: discriminator 2, then the limit as u32 little-endian, no
/// accounts. The runtime holds the transaction to `units` and prices its priority fee
/// on them, so a tight limit keeps that fee small.
pub fn set_compute_unit_limit(units: u32) -> Instruction {
    let mut data = Vec::with_capacity(5);
    data.push(2);
    data.extend_from_slice(&units.to_le_bytes());
    Instruction {
        program_id: COMPUTE_BUDGET_PROGRAM_ID,
        accounts: vec![],
        data,
    }
}

/// `SetComputeUnitPrice`: discriminator 3, then the price in micro-lamports per compute
/// unit as u64 little-endian, no accounts. The priority fee is
/// `ceil(price * limit / 1_000_000)` lamports on top of the signature fees.
pub fn set_compute_unit_price(micro_lamports: u64) -> Instruction {
    let mut data = Vec::with_capacity(9);
    data.push(3);
    data.extend_from_slice(&micro_lamports.to_le_bytes());
    Instruction {
        program_id: COMPUTE_BUDGET_PROGRAM_ID,
        accounts: vec![],
        data,
    }
}

/// The lamports a transaction with `signatures` signatures pays at `limit` compute units
/// and `price` micro-lamports each: the base fee per signature plus the priority fee
/// (rounded up, as the runtime does).
pub fn transaction_fee_lamports(signatures: u64, limit: u32, price: u64) -> u64 {
    let micro = u128::from(limit) * u128::from(price);
    let priority = micro.div_ceil(1_000_000);
    LAMPORTS_PER_SIGNATURE
        .saturating_mul(signatures)
        .saturating_add(u64::try_from(priority).unwrap_or(u64::MAX))
}

/// Compiles a legacy message with `fee_payer` first (the standard key ordering: payer,
/// writable signers, read-only signers, writable, read-only; each group by key bytes).
pub fn compile_message(
    instructions: &[Instruction],
    fee_payer: &Pubkey,
    blockhash: Hash,
) -> Message {
    Message::new_with_blockhash(instructions, Some(fee_payer), &blockhash)
}

/// The serialized message: the bytes every required signer signs.
pub fn message_bytes(message: &Message) -> Vec<u8> {
    message.serialize()
}

/// The keys that must sign, in signature order (the fee payer first).
pub fn required_signers(message: &Message) -> &[Pubkey] {
    let n = usize::from(message.header.num_required_signatures).min(message.account_keys.len());
    &message.account_keys[..n]
}

/// Solana's compact-u16 ("short vec") length prefix.
pub fn short_vec_len(len: usize) -> Result<Vec<u8>, CodecError> {
    let mut rem =
        u16::try_from(len).map_err(|_| CodecError::Invalid(format!("length {len} exceeds u16")))?;
    let mut out = Vec::with_capacity(3);
    loop {
        let mut byte = (rem & 0x7f) as u8;
        rem >>= 7;
        if rem == 0 {
            out.push(byte);
            return Ok(out);
        }
        byte |= 0x80;
        out.push(byte);
    }
}

/// The signed transaction on the wire: `short_vec(signatures) || signatures || message`.
/// `signatures` must be in [`required_signers`] order.
pub fn encode_transaction(signatures: &[[u8; 64]], message: &[u8]) -> Result<Vec<u8>, CodecError> {
    let mut out = short_vec_len(signatures.len())?;
    for s in signatures {
        out.extend_from_slice(s);
    }
    out.extend_from_slice(message);
    if out.len() > PACKET_DATA_SIZE {
        return Err(CodecError::Invalid(format!(
            "transaction is {} bytes, over the {PACKET_DATA_SIZE}-byte packet limit",
            out.len()
        )));
    }
    Ok(out)
}

/// A decoded SPL token account (the fields the rail reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenAccountState {
    /// The mint whose tokens it holds.
    pub mint: Pubkey,
    /// The token authority: the wallet (or program) that may move the tokens.
    pub owner: Pubkey,
    /// Balance, in the mint's base units.
    pub amount: u64,
    /// Frozen by the mint's freeze authority: tokens can neither leave nor arrive.
    pub frozen: bool,
}

/// Decodes token account data (165 bytes, initialized).
pub fn parse_token_account(data: &[u8]) -> Result<TokenAccountState, CodecError> {
    if data.len() != TokenAccount::LEN {
        return Err(CodecError::Invalid(format!(
            "token account data is {} bytes, expected {}",
            data.len(),
            TokenAccount::LEN
        )));
    }
    let acc = TokenAccount::unpack(data)
        .map_err(|e| CodecError::Invalid(format!("not an initialized token account: {e}")))?;
    Ok(TokenAccountState {
        mint: acc.mint,
        owner: acc.owner,
        amount: acc.amount,
        frozen: acc.state == AccountState::Frozen,
    })
}

/// A decoded SPL mint (the fields the rail reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MintState {
    /// Base units per token, as a power of ten (6 for USDC and USDT).
    pub decimals: u8,
    /// Tokens in circulation, in base units.
    pub supply: u64,
}

/// Decodes mint data (82 bytes, initialized).
pub fn parse_mint(data: &[u8]) -> Result<MintState, CodecError> {
    if data.len() != Mint::LEN {
        return Err(CodecError::Invalid(format!(
            "mint data is {} bytes, expected {}",
            data.len(),
            Mint::LEN
        )));
    }
    let m = Mint::unpack(data)
        .map_err(|e| CodecError::Invalid(format!("not an initialized mint: {e}")))?;
    Ok(MintState {
        decimals: m.decimals,
        supply: m.supply,
    })
}

/// Renders a validator transaction error (`{"InstructionError":[2,{"Custom":1}]}`) as
/// text, naming the SPL Token errors a payment can hit.
pub fn describe_transaction_error(err: &serde_json::Value) -> String {
    if let Some([idx, inner]) = err
        .get("InstructionError")
        .and_then(|v| v.as_array())
        .map(|a| a.as_slice())
        .and_then(|a| <&[serde_json::Value; 2]>::try_from(a).ok())
    {
        if let Some(code) = inner.get("Custom").and_then(|c| c.as_u64()) {
            let name = match code {
                0 => " (token: lamport balance below rent-exempt threshold)",
                1 => " (token: insufficient funds)",
                3 => " (token: account or mint mismatch)",
                4 => " (token: owner does not match)",
                17 => " (token: account is frozen)",
                18 => " (token: mint decimals mismatch)",
                _ => "",
            };
            return format!("instruction {idx} failed: custom program error {code:#x}{name}");
        }
        return format!("instruction {idx} failed: {inner}");
    }
    match err {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_vec_matches_the_reference_encoding() {
        assert_eq!(short_vec_len(0).unwrap(), vec![0]);
        assert_eq!(short_vec_len(1).unwrap(), vec![1]);
        assert_eq!(short_vec_len(0x7f).unwrap(), vec![0x7f]);
        assert_eq!(short_vec_len(0x80).unwrap(), vec![0x80, 0x01]);
        assert_eq!(short_vec_len(0x3fff).unwrap(), vec![0xff, 0x7f]);
        assert_eq!(short_vec_len(0x4000).unwrap(), vec![0x80, 0x80, 0x01]);
        assert_eq!(short_vec_len(0xffff).unwrap(), vec![0xff, 0xff, 0x03]);
        assert!(short_vec_len(0x10000).is_err());
    }

    #[test]
    fn addresses_parse_strictly() {
        let usdc = parse_address("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v").unwrap();
        assert_eq!(usdc, MAINNET_USDC_MINT);
        assert!(parse_address("").is_err());
        assert!(parse_address("0x1234").is_err());
        assert!(parse_address("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGG").is_err());
        assert!(parse_address("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v0").is_err());
        // Leading '1's encode zero bytes: a 33-byte spelling is not an address.
        assert!(parse_address("1EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v").is_err());
    }

    #[test]
    fn program_derived_addresses_are_not_wallets() {
        let owner = address_from_public_key(&[
            0x3b, 0x6a, 0x27, 0xbc, 0xce, 0xb6, 0xa4, 0x2d, 0x62, 0xa3, 0xa8, 0xd0, 0x2a, 0x6f,
            0x0d, 0x73, 0x65, 0x32, 0x15, 0x77, 0x1d, 0xe2, 0x43, 0xa6, 0x3a, 0xc0, 0x48, 0xa1,
            0x8b, 0x59, 0xda, 0x29,
        ])
        .unwrap();
        check_wallet_address(&owner).unwrap();
        let ata = associated_token_address(&owner, &MAINNET_USDC_MINT, &TOKEN_PROGRAM_ID);
        assert!(check_wallet_address(&ata).is_err());
    }

    #[test]
    fn transfer_refuses_empty_zero_and_self_legs() {
        let a = Pubkey::new_from_array([1; 32]);
        let p = Pubkey::new_from_array([2; 32]);
        let m = MAINNET_USDC_MINT;
        assert!(transfer_instructions(&p, &a, &m, &TOKEN_PROGRAM_ID, 6, &[]).is_err());
        let zero = TransferLeg {
            recipient: p,
            amount: 0,
            create_recipient_ata: false,
        };
        assert!(transfer_instructions(&p, &a, &m, &TOKEN_PROGRAM_ID, 6, &[zero]).is_err());
        let own = TransferLeg {
            recipient: a,
            amount: 1,
            create_recipient_ata: false,
        };
        assert!(transfer_instructions(&p, &a, &m, &TOKEN_PROGRAM_ID, 6, &[own]).is_err());
    }

    /// Golden vectors of the Solana SDK's own encoder (`solana-compute-budget-interface`
    /// 3.0.0, its `test_to_instruction`); `tests/solana_fixtures.rs` compares with that
    /// crate over many values too.
    #[test]
    fn compute_budget_instructions_match_the_sdk_vectors() {
        let limit = set_compute_unit_limit(257);
        assert_eq!(limit.data, vec![2, 1, 1, 0, 0]);
        assert!(limit.accounts.is_empty());
        assert_eq!(
            limit.program_id.to_string(),
            "ComputeBudget111111111111111111111111111111"
        );
        let price = set_compute_unit_price(u64::MAX);
        assert_eq!(price.data, vec![3, 255, 255, 255, 255, 255, 255, 255, 255]);
        assert_eq!(price.program_id, COMPUTE_BUDGET_PROGRAM_ID);
        assert_eq!(
            set_compute_unit_price(1_000_000).data,
            vec![3, 0x40, 0x42, 0x0f, 0, 0, 0, 0, 0]
        );
    }

    #[test]
    fn a_memo_is_the_text_bytes_without_accounts_and_bounded() {
        let m = memo("op_01J\u{e9}").unwrap();
        assert_eq!(
            m.program_id.to_string(),
            "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"
        );
        assert!(m.accounts.is_empty());
        assert_eq!(m.data, b"op_01J\xc3\xa9".to_vec());
        assert!(memo("").is_err());
        assert!(memo(&"x".repeat(MAX_MEMO_BYTES)).is_ok());
        // The bound is in bytes: 64 two-byte characters fit, one more byte does not.
        assert!(memo(&"\u{e9}".repeat(MAX_MEMO_BYTES / 2)).is_ok());
        let over = format!("{}x", "\u{e9}".repeat(MAX_MEMO_BYTES / 2));
        assert!(
            memo(&over)
                .unwrap_err()
                .to_string()
                .contains("at most 128 bytes")
        );
    }

    #[test]
    fn the_fee_rounds_its_priority_part_up() {
        assert_eq!(transaction_fee_lamports(2, 200_000, 0), 10_000);
        assert_eq!(transaction_fee_lamports(1, 1, 1), 5_001);
        assert_eq!(transaction_fee_lamports(2, 50_000, 10_000), 10_500);
        assert_eq!(transaction_fee_lamports(1, 3, 333_333), 5_001);
    }

    #[test]
    fn transaction_errors_read_well() {
        let e = serde_json::json!({"InstructionError": [1, {"Custom": 1}]});
        assert_eq!(
            describe_transaction_error(&e),
            "instruction 1 failed: custom program error 0x1 (token: insufficient funds)"
        );
        let e = serde_json::json!("BlockhashNotFound");
        assert_eq!(describe_transaction_error(&e), "BlockhashNotFound");
        let e = serde_json::json!({"InstructionError": [0, "InvalidAccountData"]});
        assert_eq!(
            describe_transaction_error(&e),
            "instruction 0 failed: \"InvalidAccountData\""
        );
    }
}
