//! Golden strings: the standards' own published examples, encoded from their fields and
//! decoded back.

use super::*;

const MVINES: &str = "mvines9iiHiQTysrwkJjGf2gb9Ex9jXJX8ns3qwf2kN";
const USDC_MINT: &str = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
const REF: &str = "82ZJ7nbGpixjeDCmEhUcmwXYfvurzAgGdtSMuHnUgyny";

/// EIP-681's ERC-20 example (the EIP's "Examples" section).
#[test]
fn eip681_the_standards_transfer_example_encodes_and_decodes() {
    let golden = "ethereum:0x89205a3a3b2a69de6dbf7f01ed13b2108b2c43e7/transfer?address=0x8e23ee67d1332ad560396262c48ffbb01f93d052&uint256=1";
    let t = Eip681Transfer {
        token: "0x89205a3a3b2a69de6dbf7f01ed13b2108b2c43e7".into(),
        chain_id: None,
        to: "0x8e23ee67d1332ad560396262c48ffbb01f93d052".into(),
        amount: 1,
    };
    assert_eq!(encode_eip681_transfer(&t), golden);
    assert_eq!(decode_eip681_transfer(golden).unwrap(), t);
}

#[test]
fn eip681_with_a_chain_id_and_scientific_notation_decodes() {
    let uri = "ethereum:0xC18360217D8F7Ab5e7c516566761Ea12Ce7F9D72@1/transfer?address=0x8e23ee67d1332ad560396262c48ffbb01f93d052&uint256=1.004e18";
    let t = decode_eip681_transfer(uri).unwrap();
    assert_eq!(t.chain_id, Some(1));
    assert_eq!(t.amount, 1_004_000_000_000_000_000);
    // What the page writes: always the chain id, base units as plain digits.
    let ours = Eip681Transfer {
        token: "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359".into(),
        chain_id: Some(137),
        to: "0x8e23ee67d1332ad560396262c48ffbb01f93d052".into(),
        amount: 25_000_000,
    };
    let s = encode_eip681_transfer(&ours);
    assert_eq!(
        s,
        "ethereum:0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359@137/transfer?address=0x8e23ee67d1332ad560396262c48ffbb01f93d052&uint256=25000000"
    );
    assert_eq!(decode_eip681_transfer(&s).unwrap(), ours);
    for bad in [
        "bitcoin:abc",
        "ethereum:0x1234/transfer?address=0x8e23ee67d1332ad560396262c48ffbb01f93d052&uint256=1",
        "ethereum:0x89205a3a3b2a69de6dbf7f01ed13b2108b2c43e7/transfer?uint256=1",
        "ethereum:0x89205a3a3b2a69de6dbf7f01ed13b2108b2c43e7/transfer?address=0x8e23ee67d1332ad560396262c48ffbb01f93d052&uint256=1.5",
        "ethereum:0x89205a3a3b2a69de6dbf7f01ed13b2108b2c43e7@x/transfer?address=0x8e23ee67d1332ad560396262c48ffbb01f93d052&uint256=1",
    ] {
        assert!(decode_eip681_transfer(bad).is_err(), "{bad}");
    }
}

/// The Solana Pay specification's USDC example.
#[test]
fn solana_pay_the_specifications_usdc_example_encodes_and_decodes() {
    let golden = "solana:mvines9iiHiQTysrwkJjGf2gb9Ex9jXJX8ns3qwf2kN?amount=0.01&spl-token=EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v&label=Michael&message=Thanks%20for%20all%20the%20fish&memo=OrderId5678";
    let t = SolanaPayTransfer {
        recipient: MVINES.into(),
        amount: Some("0.01".into()),
        spl_token: Some(USDC_MINT.into()),
        references: vec![],
        label: Some("Michael".into()),
        message: Some("Thanks for all the fish".into()),
        memo: Some("OrderId5678".into()),
    };
    assert_eq!(encode_solana_pay(&t), golden);
    assert_eq!(decode_solana_pay(golden).unwrap(), t);
}

/// The reference `encodeURL` tests (amount with references; amount and token).
#[test]
fn solana_pay_the_encode_url_tests_examples() {
    let recipient = "nick6zJc6HpW3kfBm4xS2dmbuVRyb5F3AnUvj5ymzR5";
    let spl = "USDSwr9ApdHk5bvJKMjzff41FfuX8bSxdKcR81vTwcA";
    let t = SolanaPayTransfer {
        recipient: recipient.into(),
        amount: Some("100000.123456".into()),
        references: vec![MVINES.into(), REF.into()],
        ..Default::default()
    };
    let golden =
        format!("solana:{recipient}?amount=100000.123456&reference={MVINES}&reference={REF}");
    assert_eq!(encode_solana_pay(&t), golden);
    assert_eq!(decode_solana_pay(&golden).unwrap(), t);
    let t = SolanaPayTransfer {
        recipient: recipient.into(),
        amount: Some("1.01".into()),
        spl_token: Some(spl.into()),
        ..Default::default()
    };
    let golden = format!("solana:{recipient}?amount=1.01&spl-token={spl}");
    assert_eq!(encode_solana_pay(&t), golden);
    assert_eq!(decode_solana_pay(&golden).unwrap(), t);
    let bare = SolanaPayTransfer {
        recipient: recipient.into(),
        ..Default::default()
    };
    assert_eq!(encode_solana_pay(&bare), format!("solana:{recipient}"));
    for bad in [
        "solana:notbase58!",
        "solana:mvines9iiHiQTysrwkJjGf2gb9Ex9jXJX8ns3qwf2kN?amount=1e3",
        "solana:mvines9iiHiQTysrwkJjGf2gb9Ex9jXJX8ns3qwf2kN?amount=.5",
        "solana:mvines9iiHiQTysrwkJjGf2gb9Ex9jXJX8ns3qwf2kN?reference=abc",
        "ethereum:0x00",
    ] {
        assert!(decode_solana_pay(bad).is_err(), "{bad}");
    }
}

#[test]
fn amounts_scale_exactly_or_not_at_all() {
    let m = |s: &str| Micros::parse_positive(s).unwrap();
    assert_eq!(base_units(m("25"), 6), Some(25_000_000));
    assert_eq!(base_units(m("25.5"), 18), Some(25_500_000_000_000_000_000));
    assert_eq!(base_units(m("1.5"), 2), Some(150));
    assert_eq!(base_units(m("1.005"), 2), None);
    assert_eq!(solana_amount(m("25"), 6).as_deref(), Some("25"));
    assert_eq!(solana_amount(m("0.01"), 6).as_deref(), Some("0.01"));
    assert_eq!(
        solana_amount(m("100000.123456"), 6).as_deref(),
        Some("100000.123456")
    );
    assert_eq!(solana_amount(m("1.005"), 2), None);
}

#[test]
fn a_sessions_reference_is_a_32_byte_key_of_its_own() {
    let a = solana_reference("cs_01HX3Y4Z5A6B7C8D9E0F1G2H3J");
    let b = solana_reference("cs_01HX3Y4Z5A6B7C8D9E0F1G2H3K");
    assert_ne!(a, b);
    assert_eq!(a, solana_reference("cs_01HX3Y4Z5A6B7C8D9E0F1G2H3J"));
    assert_eq!(bs58::decode(&a).into_vec().unwrap().len(), 32);
}

#[test]
fn each_network_writes_its_own_request() {
    let amount = Micros::parse_positive("12.34").unwrap();
    let evm = WalletNetwork::Evm {
        chain_id: 8453,
        tokens: [(
            Token::Usdc,
            ("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913".to_string(), 6),
        )]
        .into(),
    };
    let to = "0x8e23ee67d1332ad560396262c48ffbb01f93d052";
    let uri = evm.request_uri(Token::Usdc, to, amount, "cs_x").unwrap();
    let t = decode_eip681_transfer(&uri).unwrap();
    assert_eq!(t.chain_id, Some(8453));
    assert_eq!(t.to, to);
    assert_eq!(t.amount, 12_340_000);
    assert_eq!(evm.request_uri(Token::Usdt, to, amount, "cs_x"), None);

    let sol = WalletNetwork::Solana {
        tokens: [(Token::Usdc, (USDC_MINT.to_string(), 6))].into(),
    };
    let uri = sol
        .request_uri(Token::Usdc, MVINES, amount, "cs_x")
        .unwrap();
    let t = decode_solana_pay(&uri).unwrap();
    assert_eq!(t.recipient, MVINES);
    assert_eq!(t.amount.as_deref(), Some("12.34"));
    assert_eq!(t.spl_token.as_deref(), Some(USDC_MINT));
    assert_eq!(t.references, vec![solana_reference("cs_x")]);
    assert_eq!(
        WalletNetwork::Tron.request_uri(Token::Usdt, "T...", amount, "cs_x"),
        None
    );
}
