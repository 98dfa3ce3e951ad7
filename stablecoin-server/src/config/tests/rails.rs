//! The real rails' tables: TRON, Solana and EVM chains (split from `config/tests.rs`).

use super::*;

const TRON: &str = r#"
[rails.tron_node]
api_url = "https://api.trongrid.io"
api_key = "tg-secret-key"
scan_start_block = 70000000
usdc_contract = "TEkxiTehnzSmSe2XqrBj4w32RUN966rdz8"
"#;

#[test]
fn the_real_tron_rail_takes_defaults_except_where_it_starts_scanning() {
    let c = load_text("tron", TRON).unwrap();
    let t = c.rails.tron_node.as_ref().unwrap();
    assert_eq!(t.scan_start_block, 70_000_000);
    assert_eq!(t.usdt_contract, "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t");
    assert_eq!((t.confirmations, t.energy_per_transfer), (19, 65_000));
    assert_eq!(
        t.out_of_energy_retries, 1,
        "one re-sponsored retry by default"
    );
    assert!(!format!("{c:?}").contains("tg-secret-key"), "redacted");
    let e = load_text(
        "tron-missing",
        &TRON.replace("scan_start_block = 70000000\n", ""),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("scan_start_block"), "{e}");
    let e = load_text("tron-off", &format!("[rails]\ntron = false\n{TRON}"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("rails.tron is false"), "{e}");
    let e = load_text("tron-zero", &format!("{TRON}confirmations = 0\n"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("confirmations"), "{e}");
    let e = load_text("tron-typo", &format!("{TRON}energy = 1\n"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("energy"), "{e}");
}

const SOLANA: &str = r#"
[rails.solana_node]
rpc_url = "https://solana.example/?api-key=sol-secret-key"
scan_start_slot = 300000000
"#;

#[test]
fn the_real_solana_rail_takes_defaults_except_its_endpoint_and_start_slot() {
    let c = load_text("solana", SOLANA).unwrap();
    let s = c.rails.solana_node.as_ref().unwrap();
    assert_eq!(s.scan_start_slot, 300_000_000);
    assert_eq!(s.usdc_mint, "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v");
    assert_eq!(s.usdt_mint, "Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB");
    assert_eq!(
        s.token_program,
        "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"
    );
    assert_eq!(s.decimals, 6);
    // Monitoring and sends stay off until the operator turns them on (spec 1.5).
    assert!(!s.scan_enabled && !s.sends_enabled);
    assert_eq!(s.min_fee_payer_lamports_for_sends, 50_000_000);
    assert_eq!((s.timeout_ms, s.scan_page_size), (10_000, 1000));
    assert_eq!(s, &SolanaNodeSettings::new(s.rpc_url.clone(), 300_000_000));
    assert!(!format!("{c:?}").contains("sol-secret-key"), "redacted");
    assert!(c.summary().contains("solana (real)"), "{}", c.summary());

    let e = load_text(
        "solana-missing",
        &SOLANA.replace("scan_start_slot = 300000000\n", ""),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("scan_start_slot"), "{e}");
    let e = load_text("solana-off", &format!("[rails]\nsolana = false\n{SOLANA}"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("rails.solana is false"), "{e}");
    let e = load_text(
        "solana-typo",
        &format!("{SOLANA}commitment = \"finalized\"\n"),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("commitment"), "{e}");
    let e = load_text("solana-page", &format!("{SOLANA}scan_page_size = 1001\n"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("scan_page_size"), "{e}");
}

#[cfg(feature = "solana")]
#[test]
fn a_bad_solana_mint_is_refused_by_name() {
    for (tag, line, name) in [
        (
            "usdc",
            "usdc_mint = \"EPjFWdd5AufqSSqeM2qN1xzybap\"\n",
            "usdc_mint",
        ),
        ("usdt", "usdt_mint = \"not base58 0OIl\"\n", "usdt_mint"),
        ("program", "token_program = \"\"\n", "token_program"),
        // The same mint for both tokens would credit one as the other.
        (
            "same",
            "usdt_mint = \"EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v\"\n",
            "usdc_mint and usdt_mint must differ",
        ),
        (
            "native",
            "usdt_mint = \"So11111111111111111111111111111111111111112\"\n",
            "native SOL",
        ),
    ] {
        let e = load_text(&format!("solana-{tag}"), &format!("{SOLANA}{line}"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("rails.solana_node") && e.contains(name),
            "{tag}: {e}"
        );
    }
}

#[test]
fn the_solana_environment_variables_fill_the_node_table() {
    let dir = std::env::temp_dir().join(format!("scfg-solenv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("c.toml");
    std::fs::write(
        &path,
        "[rails.solana_node]\nrpc_url = \"http://file\"\nscan_start_slot = 7\n",
    )
    .unwrap();
    let c = Config::load(
        Some(&path),
        env(&[
            ("STABLECOIN_SOLANA_RPC_URL", "http://from-env"),
            ("STABLECOIN_SOLANA_SCAN_ENABLED", "true"),
            ("STABLECOIN_SOLANA_SENDS_ENABLED", "1"),
        ]),
    )
    .unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let s = c.rails.solana_node.unwrap();
    assert_eq!(s.rpc_url.expose(), "http://from-env");
    assert!(s.scan_enabled && s.sends_enabled);
    assert_eq!(s.scan_start_slot, 7);
    // Without a start slot the table the variable creates is incomplete, and says so.
    let e = Config::load(None, env(&[("STABLECOIN_SOLANA_RPC_URL", "http://x")]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("scan_start_slot"), "{e}");
}

#[test]
fn a_real_evm_chain_is_configured_in_full() {
    let c = load_text("evm", CHAIN).unwrap();
    let live = c.rails.live_evm().unwrap();
    let bsc = live[&56];
    assert_eq!(bsc.usdc.as_ref().unwrap().decimals, 18);
    assert_eq!(bsc.min_paymaster_deposit_wei, Wei(10u128.pow(20)));
    assert_eq!(bsc.min_bundler_balance_wei, Wei(10u128.pow(17)));
    assert_eq!(bsc.rpc_timeout_ms, 10_000);
    assert!(bsc.bundler_url.is_none(), "self-bundling by default");
    assert_eq!(bsc.replace_bundle_after_ms, 60_000);
    assert_eq!(bsc.bundler_resend_after_ms, 30_000);
    assert_eq!(
        bsc.max_fee_per_gas_ceiling_wei, None,
        "10x the first fee cap"
    );
    assert!(!live.contains_key(&137), "137 stays simulated");
    assert!(
        !format!("{c:?}").contains("apikey"),
        "the RPC URL is redacted"
    );
}

#[test]
fn an_evm_chain_may_name_an_external_bundler_which_stays_secret() {
    let text = CHAIN.replace(
        "confirmations = 12\n",
        "confirmations = 12\nbundler_url = \"https://bundler.example/rpc?apikey=bndkey\"\n",
    );
    let c = load_text("evm-bundler", &text).unwrap();
    let bsc = c.rails.live_evm().unwrap()[&56];
    assert_eq!(
        bsc.bundler_url.as_ref().map(|u| u.expose()),
        Some("https://bundler.example/rpc?apikey=bndkey")
    );
    assert!(
        !format!("{c:?}").contains("bndkey"),
        "the bundler URL is redacted"
    );
}

#[test]
fn an_evm_chain_sets_when_and_how_far_its_bundles_are_replaced() {
    let text = CHAIN.replace(
        "confirmations = 12\n",
        "confirmations = 12\nreplace_bundle_after_ms = 20000\n\
         max_fee_per_gas_ceiling_wei = \"300000000000\"\n",
    );
    let c = load_text("evm-replace", &text).unwrap();
    let bsc = c.rails.live_evm().unwrap()[&56];
    assert_eq!(bsc.replace_bundle_after_ms, 20_000);
    assert_eq!(bsc.max_fee_per_gas_ceiling_wei, Some(Wei(300_000_000_000)));
    let never = CHAIN.replace(
        "confirmations = 12\n",
        "confirmations = 12\nreplace_bundle_after_ms = 0\n",
    );
    let e = load_text("evm-replace-0", &never).unwrap_err().to_string();
    assert!(e.contains("replace_bundle_after_ms"), "{e}");
}

#[test]
fn an_incomplete_or_stray_evm_chain_is_refused_with_the_reason() {
    let missing = CHAIN.replace("scan_start_block = 40000000\n", "");
    let e = load_text("evm-missing", &missing).unwrap_err().to_string();
    assert!(e.contains("scan_start_block"), "{e}");
    let stray = CHAIN.replace("evm_chains = [137, 56]", "evm_chains = [137]");
    let e = load_text("evm-stray", &stray).unwrap_err().to_string();
    assert!(e.contains("not in rails.evm_chains"), "{e}");
    let bad_key = CHAIN.replace("[rails.evm.56]", "[rails.evm.bsc]");
    let e = load_text("evm-key", &bad_key).unwrap_err().to_string();
    assert!(e.contains("chain id"), "{e}");
    let no_token = CHAIN.replace(
        "usdc = { address = \"0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d\", decimals = 18 }\n",
        "",
    );
    let e = load_text("evm-token", &no_token).unwrap_err().to_string();
    assert!(e.contains("usdc or usdt"), "{e}");
    let typo = CHAIN.replace("confirmations", "confirmation");
    assert!(load_text("evm-typo", &typo).is_err());
}

#[test]
fn fallback_node_urls_come_after_the_preferred_one_and_a_repeat_is_refused() {
    let c = load_text(
        "solana-fallbacks",
        &format!(
            "{SOLANA}fallback_rpc_urls = [\"https://b.example/?api-key=b-secret\", \"https://c.example/\"]\nrpc_retry_down_after_ms = 5000\n"
        ),
    )
    .unwrap();
    let s = c.rails.solana_node.as_ref().unwrap();
    assert_eq!(s.rpc_retry_down_after_ms, 5_000);
    assert_eq!(
        super::node_urls("rails.solana_node", &s.rpc_url, &s.fallback_rpc_urls).unwrap(),
        vec![
            "https://solana.example/?api-key=sol-secret-key",
            "https://b.example/?api-key=b-secret",
            "https://c.example/"
        ]
    );
    assert!(!format!("{c:?}").contains("b-secret"), "redacted");
    // The default: the one URL, a failed one waiting 30 s behind the healthy ones.
    let one = load_text("solana", SOLANA).unwrap();
    let one = one.rails.solana_node.as_ref().unwrap();
    assert!(one.fallback_rpc_urls.is_empty());
    assert_eq!(one.rpc_retry_down_after_ms, 30_000);

    let e = super::node_urls(
        "rails.solana_node",
        &s.rpc_url,
        &[
            Secret::new("https://c.example/"),
            Secret::new(s.rpc_url.expose()),
        ],
    )
    .unwrap_err();
    assert_eq!(
        e,
        "rails.solana_node: fallback URL #2 repeats an earlier URL"
    );
}
