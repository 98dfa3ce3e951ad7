use super::*;
use std::collections::HashMap;

mod rails;

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let m: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| m.get(k).cloned()
}

#[test]
fn no_configuration_is_valid() {
    let c = Config::load(None, env(&[])).unwrap();
    assert_eq!(c.listen, "127.0.0.1:8080");
    assert_eq!(
        c.storage,
        StorageConfig::Sqlite {
            path: None,
            max_background: 4
        }
    );
    assert_eq!(c.primary_evm_chain(), Some(137));
    assert!(c.demo.enabled);
}

/// A SQLite setting alone (no file, no `STABLECOIN_STORAGE`) tunes the default store; a
/// PostgreSQL setting alone is refused with what is missing.
#[test]
fn a_storage_setting_without_its_kind() {
    let c = Config::load(None, env(&[("STABLECOIN_SQLITE_MAX_BACKGROUND", "1")])).unwrap();
    assert_eq!(
        c.storage,
        StorageConfig::Sqlite {
            path: None,
            max_background: 1
        }
    );
    let c = Config::load(None, env(&[("STABLECOIN_SQLITE_PATH", "/tmp/y.db")])).unwrap();
    assert!(matches!(
        c.storage,
        StorageConfig::Sqlite { path: Some(_), .. }
    ));
    let e = Config::load(
        None,
        env(&[("STABLECOIN_POSTGRES_URL", "postgres://u@127.0.0.1/db")]),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("STABLECOIN_STORAGE=postgres"), "{e}");
    assert!(!e.contains("postgres://u@"), "no URL in the error: {e}");
}

#[test]
fn file_then_env() {
    let dir = std::env::temp_dir().join(format!("scfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("c.toml");
    std::fs::write(
        &path,
        "listen = \"127.0.0.1:9000\"\n[storage]\nkind = \"sqlite\"\npath = \"/tmp/x.db\"\n[rails]\nevm_chains = [137, 8453]\n",
    )
    .unwrap();
    let c = Config::load(Some(&path), env(&[])).unwrap();
    assert_eq!(c.listen, "127.0.0.1:9000");
    assert_eq!(
        c.storage,
        StorageConfig::Sqlite {
            path: Some("/tmp/x.db".into()),
            max_background: 4
        }
    );
    let c = Config::load(
        Some(&path),
        env(&[
            ("STABLECOIN_LISTEN", "0.0.0.0:1"),
            ("STABLECOIN_RAILS_EVM_CHAINS", "56"),
            ("STABLECOIN_DEMO", "false"),
            ("STABLECOIN_SQLITE_MAX_BACKGROUND", "16"),
        ]),
    )
    .unwrap();
    assert_eq!(
        c.storage,
        StorageConfig::Sqlite {
            path: Some("/tmp/x.db".into()),
            max_background: 16
        }
    );
    for bad in ["0", "1025"] {
        let e = Config::load(
            Some(&path),
            env(&[("STABLECOIN_SQLITE_MAX_BACKGROUND", bad)]),
        );
        assert!(e.is_err(), "max_background {bad} must be refused");
    }
    assert_eq!(c.listen, "0.0.0.0:1");
    assert_eq!(c.rails.evm_chains, vec![56]);
    assert!(!c.demo.enabled);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn typos_and_bad_values_are_errors() {
    let dir = std::env::temp_dir().join(format!("scfg2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("c.toml");
    std::fs::write(&path, "lisen = \"127.0.0.1:9000\"\n").unwrap();
    assert!(Config::load(Some(&path), env(&[])).is_err());
    std::fs::remove_dir_all(&dir).ok();
    assert!(Config::load(None, env(&[("STABLECOIN_DEMO", "maybe")])).is_err());
    assert!(Config::load(None, env(&[("STABLECOIN_LISTEN", "nowhere")])).is_err());
    assert!(Config::load(None, env(&[("STABLECOIN_MASTER_SEED", "abc")])).is_err());
    assert!(Config::load(None, env(&[("STABLECOIN_STORAGE", "mongo")])).is_err());
    for nice in ["-1", "20"] {
        assert!(Config::load(None, env(&[("STABLECOIN_WORKER_NICE", nice)])).is_err());
    }
    let c = Config::load(None, env(&[("STABLECOIN_WORKER_NICE", "19")])).unwrap();
    assert_eq!(c.worker_nice, 19);
    let pg = Config::load(
        None,
        env(&[
            ("STABLECOIN_STORAGE", "postgres"),
            ("STABLECOIN_POSTGRES_URL", "postgres://u:secretpw@h/db"),
        ]),
    )
    .unwrap();
    assert!(!format!("{pg:?}").contains("secretpw"), "secrets redacted");
}

const CHAIN: &str = r#"
[rails]
evm_chains = [137, 56]
[rails.evm.56]
rpc_url = "https://user:apikey@bsc.example/rpc"
entry_point = "0x4337084D9E255Ff0702461CF8895CE9E3b5Ff108"
factory = "0x0000000000000000000000000000000000000f01"
paymaster = "0x0000000000000000000000000000000000000f02"
usdc = { address = "0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d", decimals = 18 }
min_paymaster_deposit_wei = "100000000000000000000"
min_bundler_balance_wei = 100000000000000000
confirmations = 12
scan_start_block = 40000000
"#;

fn load_text(tag: &str, text: &str) -> Result<Config, ConfigError> {
    let dir = std::env::temp_dir().join(format!("scfg-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("c.toml");
    std::fs::write(&path, text).unwrap();
    let c = Config::load(Some(&path), env(&[]));
    std::fs::remove_dir_all(&dir).ok();
    c
}

#[test]
fn seeds_parse() {
    let s = "00".repeat(31) + "ff";
    assert_eq!(parse_seed(&s).unwrap()[31], 255);
    assert!(parse_seed("zz").is_err());
}

#[test]
fn sponsored_cost_limits_have_safe_defaults_and_refuse_bad_values() {
    use stablecoin_core::ports::RailId;
    let c = Config::load(None, env(&[])).unwrap();
    let floors = c.limits.min_send().unwrap();
    assert_eq!(floors.floor(RailId::Evm(137)).0, 100_000);
    assert_eq!(floors.floor(RailId::Tron).0, 1_000_000);
    assert_eq!(floors.floor(RailId::Solana).0, 100_000);
    assert_eq!(c.limits.rent_quota().max_per_tenant, 1_000);
    assert_eq!(c.engine.payment_validity_ms, 600_000);

    let c = Config::load(
        None,
        env(&[
            ("STABLECOIN_MIN_SEND_TRON", "0"),
            ("STABLECOIN_MIN_SEND_EVM", "2.5"),
            ("STABLECOIN_RENT_QUOTA_PER_TENANT", "7"),
            ("STABLECOIN_ENGINE_PAYMENT_VALIDITY_MS", "120000"),
        ]),
    )
    .unwrap();
    let floors = c.limits.min_send().unwrap();
    assert_eq!(floors.floor(RailId::Tron).0, 0);
    assert_eq!(floors.floor(RailId::Evm(8453)).0, 2_500_000);
    assert_eq!(c.limits.rent_quota().max_per_tenant, 7);
    assert_eq!(c.engine.payment_validity_ms, 120_000);

    for (key, bad) in [
        ("STABLECOIN_MIN_SEND_EVM", "0.0000001"),
        ("STABLECOIN_MIN_SEND_SOLANA", "-1"),
        ("STABLECOIN_MIN_SEND_TRON", "one"),
        ("STABLECOIN_ENGINE_PAYMENT_VALIDITY_MS", "1000"),
    ] {
        let e = Config::load(None, env(&[(key, bad)])).unwrap_err();
        assert!(
            e.to_string().contains("min_send") || e.to_string().contains("payment_validity"),
            "{key}={bad}: {e}"
        );
    }
}

const RATES: &str = r#"
[rates]
kind = "http"
url = "https://fx.example/v1/{currency}/{token}?key=url-secret"
auth_header = "Authorization"
auth_value = "Bearer feed-secret"
rate_pointer = "/data/rate"
timestamp_pointer = "/data/timestamp"
spread_bps = 150
decimals = { NGN = 4 }
"#;

#[test]
fn an_http_rate_feed_takes_defaults_and_refuses_bad_values_by_name() {
    let c = load_text("rates", RATES).unwrap();
    assert_eq!(c.rates.kind(), "http");
    let feed = c.rates.feed_config().unwrap();
    assert_eq!(
        (feed.max_age_ms, feed.timeout_ms, feed.spread_bps),
        (60_000, 5_000, 150)
    );
    assert_eq!(feed.decimals.get("NGN"), Some(&4));
    let shown = format!("{c:?}");
    assert!(
        !shown.contains("feed-secret") && !shown.contains("url-secret"),
        "{shown}"
    );
    // From the environment only.
    let c = Config::load(
        None,
        env(&[
            ("STABLECOIN_RATES", "http"),
            ("STABLECOIN_RATES_URL", "https://fx.example/all"),
            ("STABLECOIN_RATES_RATE_POINTER", "/rates/{currency}_{token}"),
            ("STABLECOIN_RATES_MAX_AGE_MS", "30000"),
            ("STABLECOIN_RATES_SPREAD_BPS", "75"),
        ]),
    )
    .unwrap();
    let feed = c.rates.feed_config().unwrap();
    assert_eq!((feed.max_age_ms, feed.spread_bps), (30_000, 75));
    for change in [
        ("spread_bps = 150", "spread_bps = 10000"),
        ("rate_pointer = \"/data/rate\"", "rate_pointer = \"data\""),
        ("auth_header = \"Authorization\"\n", ""),
        ("decimals = { NGN = 4 }", "decimals = { NGN = 40 }"),
        ("url = ", "max_age_ms = 0\nurl = "),
    ] {
        let e = load_text("rates-bad", &RATES.replace(change.0, change.1))
            .unwrap_err()
            .to_string();
        assert!(e.contains("rates (http)"), "{e}");
        assert!(
            !e.contains("feed-secret") && !e.contains("url-secret"),
            "{e}"
        );
    }
    let e = load_text(
        "rates-missing",
        &RATES.replace("rate_pointer = \"/data/rate\"\n", ""),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("rate_pointer"), "{e}");
}

#[test]
fn a_remote_signer_comes_from_the_environment_and_its_fields_are_checked() {
    let token = "t".repeat(32);
    let c = Config::load(
        None,
        env(&[
            ("STABLECOIN_SIGNER", "remote"),
            ("STABLECOIN_SIGNER_URL", "http://10.0.0.5:7300"),
            ("STABLECOIN_SIGNER_TOKEN", &token),
        ]),
    )
    .unwrap();
    assert_eq!(
        c.signer,
        SignerSettings::Remote {
            url: "http://10.0.0.5:7300".into(),
            token: Secret::new(token.clone()),
            timeout_ms: 5_000,
        }
    );
    assert_eq!(c.signer.kind(), "remote");
    assert!(!c.signer.is_local());
    // The token never prints.
    assert!(!format!("{c:?}").contains(&token));

    let invalid = |pairs: &[(&str, &str)]| match Config::load(None, env(pairs)) {
        Err(ConfigError::Invalid(m)) => m,
        other => panic!("{other:?}"),
    };
    let base = [
        ("STABLECOIN_SIGNER", "remote"),
        ("STABLECOIN_SIGNER_URL", "http://10.0.0.5:7300"),
    ];
    let m = invalid(&[base[0], base[1], ("STABLECOIN_SIGNER_TOKEN", "short")]);
    assert!(m.contains("signer.token"), "{m}");
    let m = invalid(&[
        base[0],
        ("STABLECOIN_SIGNER_URL", "10.0.0.5:7300"),
        ("STABLECOIN_SIGNER_TOKEN", &token),
    ]);
    assert!(m.contains("signer.url"), "{m}");
    let m = invalid(&[
        base[0],
        base[1],
        ("STABLECOIN_SIGNER_TOKEN", &token),
        ("STABLECOIN_SIGNER_TIMEOUT_MS", "0"),
    ]);
    assert!(m.contains("signer.timeout_ms"), "{m}");
    // A seed in this process contradicts a remote signer.
    let seed = "11".repeat(32);
    let m = invalid(&[
        base[0],
        base[1],
        ("STABLECOIN_SIGNER_TOKEN", &token),
        ("STABLECOIN_MASTER_SEED", &seed),
    ]);
    assert!(m.contains("master_seed"), "{m}");
}

#[test]
fn sms_gateways_are_configured_in_toml_and_env_with_secrets_hidden() {
    let c = load_text(
        "sms-at",
        "[sms]\nkind = \"africastalking\"\nusername = \"sandbox\"\napi_key = \"atsk_1\"\n",
    )
    .unwrap();
    assert_eq!(c.sms.kind(), "africastalking");
    assert!(!c.sms.is_in_memory());
    let SmsSettings::AfricasTalking {
        base_url,
        timeout_ms,
        ..
    } = &c.sms
    else {
        panic!("{:?}", c.sms)
    };
    assert_eq!(
        (base_url.as_str(), *timeout_ms),
        ("https://api.africastalking.com", 10_000)
    );
    assert!(!format!("{c:?}").contains("atsk_1"), "the key never prints");

    let c = Config::load(
        None,
        env(&[
            ("STABLECOIN_SMS", "twilio"),
            ("STABLECOIN_SMS_ACCOUNT_SID", "AC1"),
            (
                "STABLECOIN_SMS_AUTH_TOKEN",
                "tw_secret-0123456789abcdef0123456",
            ),
            ("STABLECOIN_SMS_MESSAGING_SERVICE_SID", "MG1"),
            (
                "STABLECOIN_SMS_STATUS_CALLBACK_URL",
                "https://api.example.com/v1/callbacks/sms/twilio",
            ),
        ]),
    )
    .unwrap();
    assert_eq!(c.sms.kind(), "twilio");
    assert!(!format!("{c:?}").contains("tw_secret"));
}

#[test]
fn an_incomplete_or_stray_sms_setting_is_refused_naming_it() {
    let cases = [
        (
            "[sms]\nkind = \"africastalking\"\nusername = \"u\"\n",
            "api_key",
        ),
        (
            "[sms]\nkind = \"africastalking\"\nusername = \" \"\napi_key = \"k\"\n",
            "sms.username",
        ),
        (
            "[sms]\nkind = \"africastalking\"\nusername = \"u\"\napi_key = \"k\"\naccount_sid = \"AC\"\n",
            "account_sid",
        ),
        (
            "[sms]\nkind = \"twilio\"\naccount_sid = \"AC\"\nauth_token = \"tw-auth-token-0123456789abcdef0123\"\n",
            "messaging_service_sid",
        ),
        (
            "[sms]\nkind = \"twilio\"\naccount_sid = \"AC\"\nauth_token = \"short-token\"\nfrom = \"+1\"\n",
            "sms.auth_token",
        ),
        (
            "[sms]\nkind = \"twilio\"\naccount_sid = \"AC\"\nauth_token = \"tw-auth-token-0123456789abcdef0123\"\nfrom = \"+1\"\nmessaging_service_sid = \"MG\"\n",
            "messaging_service_sid",
        ),
        (
            "[sms]\nkind = \"twilio\"\naccount_sid = \"AC\"\nauth_token = \"tw-auth-token-0123456789abcdef0123\"\nfrom = \"+1\"\nstatus_callback_url = \"ftp://x\"\n",
            "sms.status_callback_url",
        ),
        (
            "[sms]\nkind = \"africastalking\"\nusername = \"u\"\napi_key = \"k\"\ntimeout_ms = 5\n",
            "sms.timeout_ms",
        ),
    ];
    for (i, (text, names)) in cases.iter().enumerate() {
        let e = load_text(&format!("sms-bad-{i}"), text)
            .unwrap_err()
            .to_string();
        assert!(e.contains(names), "{text}: {e}");
    }
}

#[test]
fn notices_set_the_ussd_instructions_per_country() {
    let c = load_text(
        "notices",
        "[notices]\nussd_instructions = { \"225\" = \"Composez le *133#.\" }\n",
    )
    .unwrap();
    let p = c.notices.sms_policy();
    let ph = |s: &str| stablecoin_core::domain::phone::Phone::parse(s).unwrap();
    assert_eq!(p.ussd_for(&ph("+2250700000001")), "Composez le *133#.");
    assert!(p.ussd_for(&ph("+254700000001")).contains("*144#"));
    for (i, bad) in [
        "[notices]\nussd_instructions = { \"+225\" = \"x\" }\n",
        "[notices]\nussd_instructions = { \"225\" = \"\" }\n",
        "[notices]\nussd_instructions_default = \" \"\n",
    ]
    .iter()
    .enumerate()
    {
        let e = load_text(&format!("notices-bad-{i}"), bad)
            .unwrap_err()
            .to_string();
        assert!(e.contains("notices.ussd_instructions"), "{bad}: {e}");
    }
}

#[test]
fn the_built_in_ussd_table_covers_the_spec_markets_in_their_languages() {
    let table = super::default_ussd_instructions();
    // XOF, XAF, NGN, GHS, KES: every country of each currency has an entry.
    for code in [
        "221", "223", "225", "226", "227", "228", "229", "245", // XOF
        "235", "236", "237", "240", "241", "242", // XAF
        "234", "233", "254", // NGN, GHS, KES
    ] {
        assert!(table.contains_key(code), "{code}");
    }
    // Each entry is a valid configured entry (calling code, one SMS).
    let as_configured = NoticeSettings {
        ussd_instructions: table.clone(),
        ussd_instructions_default: None,
    };
    as_configured.validate().unwrap();
    let p = NoticeSettings::default().sms_policy();
    let ph = |s: &str| stablecoin_core::domain::phone::Phone::parse(s).unwrap();
    assert!(p.ussd_for(&ph("+221770000001")).starts_with("Composez"));
    assert!(p.ussd_for(&ph("+237670000001")).starts_with("Composez"));
    assert!(p.ussd_for(&ph("+2348030000001")).starts_with("Dial"));
    // A market the spec does not name: the default text.
    assert_eq!(p.ussd_for(&ph("+14155550100")), p.ussd_instructions_default);
    // A configured code replaces its table entry only.
    let c = load_text(
        "notices-override",
        "[notices]\nussd_instructions = { \"221\" = \"Tapez #111#.\" }\n",
    )
    .unwrap();
    let p = c.notices.sms_policy();
    assert_eq!(p.ussd_for(&ph("+221770000001")), "Tapez #111#.");
    assert_eq!(p.ussd_for(&ph("+225070000001")), table["225"]);
}

/// One variable the spec names: its name, a config file it needs beside it, two values
/// it can take, and what each value sets.
struct SpecVar {
    name: &'static str,
    file: &'static str,
    values: [&'static str; 2],
    probe: fn(&Config) -> String,
}

/// Every environment variable the spec names (`grep -oE '[A-Z][A-Z0-9_]+=' spec`: only
/// spec 1.5's `SOLANA_SCAN_ENABLED`), with what it sets.
const SPEC_VARS: &[SpecVar] = &[SpecVar {
    name: "SOLANA_SCAN_ENABLED",
    file: "[rails.solana_node]\nrpc_url = \"http://node\"\nscan_start_slot = 7\n",
    values: ["true", "false"],
    probe: |c| {
        c.rails
            .solana_node
            .as_ref()
            .map(|s| s.scan_enabled)
            .unwrap_or_default()
            .to_string()
    },
}];

#[test]
fn every_variable_the_spec_names_is_an_alias_of_its_prefixed_form() {
    let aliases: HashMap<&str, &str> = spec_env_aliases().collect();
    let mut names: Vec<&str> = SPEC_VARS.iter().map(|v| v.name).collect();
    let mut listed: Vec<&str> = aliases.keys().copied().collect();
    names.sort_unstable();
    listed.sort_unstable();
    assert_eq!(
        names, listed,
        "every spec variable has an alias, and only those"
    );
    let dir = std::env::temp_dir().join(format!("scfg-specvars-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for v in SPEC_VARS {
        let prefixed = aliases[v.name];
        assert_eq!(prefixed, format!("STABLECOIN_{}", v.name));
        assert!(env_var_names().any(|n| n == v.name), "{}", v.name);
        assert!(env_var_names().any(|n| n == prefixed), "{prefixed}");
        let path = dir.join(format!("{}.toml", v.name));
        std::fs::write(&path, v.file).unwrap();
        let load = |pairs: &[(&str, &str)]| Config::load(Some(&path), env(pairs));
        for value in v.values {
            // The spec's name alone sets what the prefixed form sets, the whole config
            // alike.
            let by_alias = load(&[(v.name, value)]).unwrap();
            let by_prefixed = load(&[(prefixed, value)]).unwrap();
            assert_eq!(
                format!("{by_alias:?}"),
                format!("{by_prefixed:?}"),
                "{}={value}",
                v.name
            );
            assert_eq!((v.probe)(&by_alias), value, "{}={value}", v.name);
            // Both set and agreeing: accepted, the same value.
            let both = load(&[(v.name, value), (prefixed, value)]).unwrap();
            assert_eq!((v.probe)(&both), value);
        }
        // Both set and disagreeing: refused, naming both (the prefixed form is
        // authoritative, so neither is silently dropped).
        let [a, b] = v.values;
        for (alias_value, prefixed_value) in [(a, b), (b, a)] {
            let e = load(&[(v.name, alias_value), (prefixed, prefixed_value)])
                .unwrap_err()
                .to_string();
            assert!(e.contains(v.name) && e.contains(prefixed), "{e}");
            assert!(e.contains("conflicts"), "{e}");
        }
        // A bad value under the spec's name is refused under that name.
        let e = load(&[(v.name, "maybe")]).unwrap_err().to_string();
        assert!(e.contains(&format!("variable {}:", v.name)), "{e}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
