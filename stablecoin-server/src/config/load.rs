//! Loading: built-in defaults, then the TOML file, then `STABLECOIN_*` environment
//! variables, each variable mapped onto the TOML key it sets. The variables the spec
//! names without the prefix (`SOLANA_SCAN_ENABLED`) are aliases of their prefixed form
//! ([`SPEC_ALIASES`]).

use super::{Config, ConfigError};
use serde::Deserialize;
use std::path::Path;

#[derive(Clone, Copy)]
enum EnvKind {
    Str,
    Int,
    Bool,
    IntList,
    StrList,
}

/// Every environment variable and the TOML key it sets.
const ENV: &[(&str, &[&str], EnvKind)] = &[
    ("STABLECOIN_LISTEN", &["listen"], EnvKind::Str),
    ("STABLECOIN_MODE", &["mode"], EnvKind::Str),
    ("STABLECOIN_SMS", &["sms", "kind"], EnvKind::Str),
    (
        "STABLECOIN_SMS_BASE_URL",
        &["sms", "base_url"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_SMS_USERNAME",
        &["sms", "username"],
        EnvKind::Str,
    ),
    ("STABLECOIN_SMS_API_KEY", &["sms", "api_key"], EnvKind::Str),
    (
        "STABLECOIN_SMS_ACCOUNT_SID",
        &["sms", "account_sid"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_SMS_AUTH_TOKEN",
        &["sms", "auth_token"],
        EnvKind::Str,
    ),
    ("STABLECOIN_SMS_FROM", &["sms", "from"], EnvKind::Str),
    (
        "STABLECOIN_SMS_MESSAGING_SERVICE_SID",
        &["sms", "messaging_service_sid"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_SMS_STATUS_CALLBACK_URL",
        &["sms", "status_callback_url"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_SMS_TIMEOUT_MS",
        &["sms", "timeout_ms"],
        EnvKind::Int,
    ),
    ("STABLECOIN_RATES", &["rates", "kind"], EnvKind::Str),
    ("STABLECOIN_RATES_URL", &["rates", "url"], EnvKind::Str),
    (
        "STABLECOIN_RATES_AUTH_HEADER",
        &["rates", "auth_header"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_RATES_AUTH_VALUE",
        &["rates", "auth_value"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_RATES_RATE_POINTER",
        &["rates", "rate_pointer"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_RATES_TIMESTAMP_POINTER",
        &["rates", "timestamp_pointer"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_RATES_MAX_AGE_MS",
        &["rates", "max_age_ms"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_RATES_SPREAD_BPS",
        &["rates", "spread_bps"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_RATES_MAX_MOVE_BPS",
        &["rates", "max_move_bps"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_RATES_TIMEOUT_MS",
        &["rates", "timeout_ms"],
        EnvKind::Int,
    ),
    ("STABLECOIN_SIGNER", &["signer", "kind"], EnvKind::Str),
    ("STABLECOIN_SIGNER_URL", &["signer", "url"], EnvKind::Str),
    (
        "STABLECOIN_SIGNER_TOKEN",
        &["signer", "token"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_SIGNER_TIMEOUT_MS",
        &["signer", "timeout_ms"],
        EnvKind::Int,
    ),
    ("STABLECOIN_PAYOUTS", &["payouts", "kind"], EnvKind::Str),
    (
        "STABLECOIN_PAYOUTS_BASE_URL",
        &["payouts", "base_url"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_PAYOUTS_CONSUMER_KEY",
        &["payouts", "consumer_key"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_PAYOUTS_CONSUMER_SECRET",
        &["payouts", "consumer_secret"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_PAYOUTS_INITIATOR_NAME",
        &["payouts", "initiator_name"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_PAYOUTS_SECURITY_CREDENTIAL",
        &["payouts", "security_credential"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_PAYOUTS_SHORTCODE",
        &["payouts", "shortcode"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_PAYOUTS_COMMAND_ID",
        &["payouts", "command_id"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_PAYOUTS_API_USER",
        &["payouts", "api_user"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_PAYOUTS_API_KEY",
        &["payouts", "api_key"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_PAYOUTS_SUBSCRIPTION_KEY",
        &["payouts", "subscription_key"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_PAYOUTS_TARGET_ENVIRONMENT",
        &["payouts", "target_environment"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_PAYOUTS_CURRENCY",
        &["payouts", "currency"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_PAYOUTS_CALLBACK_BASE_URL",
        &["payouts", "callback_base_url"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_PAYOUTS_CALLBACK_SECRET",
        &["payouts", "callback_secret"],
        EnvKind::Str,
    ),
    ("STABLECOIN_SCREENING", &["screening", "kind"], EnvKind::Str),
    (
        "STABLECOIN_SCREENING_PATH",
        &["screening", "path"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_SCREENING_BASE_URL",
        &["screening", "base_url"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_SCREENING_API_KEY",
        &["screening", "api_key"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_SCREENING_TIMEOUT_MS",
        &["screening", "timeout_ms"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_SCREENING_FAIL_MODE",
        &["screening", "fail_mode"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_SCREENING_ACKNOWLEDGE_UNSCREENED",
        &["screening", "acknowledge_unscreened"],
        EnvKind::Bool,
    ),
    (
        "STABLECOIN_PAYOUTS_TIMEOUT_MS",
        &["payouts", "timeout_ms"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_PAYOUTS_RESULT_WAIT_MS",
        &["payouts", "result_wait_ms"],
        EnvKind::Int,
    ),
    ("STABLECOIN_DATA_DIR", &["data_dir"], EnvKind::Str),
    ("STABLECOIN_MASTER_SEED", &["master_seed"], EnvKind::Str),
    (
        "STABLECOIN_BODY_LIMIT_BYTES",
        &["body_limit_bytes"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_WORKER_INTERVAL_MS",
        &["worker_interval_ms"],
        EnvKind::Int,
    ),
    ("STABLECOIN_RUN_WORKERS", &["run_workers"], EnvKind::Bool),
    ("STABLECOIN_WORKER_NICE", &["worker_nice"], EnvKind::Int),
    ("STABLECOIN_STORAGE", &["storage", "kind"], EnvKind::Str),
    ("STABLECOIN_SQLITE_PATH", &["storage", "path"], EnvKind::Str),
    (
        "STABLECOIN_SQLITE_MAX_BACKGROUND",
        &["storage", "max_background"],
        EnvKind::Int,
    ),
    ("STABLECOIN_POSTGRES_URL", &["storage", "url"], EnvKind::Str),
    (
        "STABLECOIN_POSTGRES_CONNECT_TIMEOUT_SECS",
        &["storage", "connect_timeout_secs"],
        EnvKind::Int,
    ),
    ("STABLECOIN_LOG", &["log", "filter"], EnvKind::Str),
    ("STABLECOIN_LOG_FORMAT", &["log", "format"], EnvKind::Str),
    (
        "STABLECOIN_ENGINE_POLL_INTERVAL_MS",
        &["engine", "poll_interval_ms"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_ENGINE_CLAIM_LEASE_MS",
        &["engine", "claim_lease_ms"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_ENGINE_UNKNOWN_GRACE_MS",
        &["engine", "unknown_grace_ms"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_ENGINE_READ_CACHE_MS",
        &["engine", "read_cache_ms"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_ENGINE_WALLET_CACHE_MS",
        &["engine", "wallet_cache_ms"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_ENGINE_BATCH_LIMIT",
        &["engine", "batch_limit"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_ENGINE_WORKER_ID",
        &["engine", "worker_id"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_ENGINE_SINGLETON_LEASE_MS",
        &["engine", "singleton_lease_ms"],
        EnvKind::Int,
    ),
    ("STABLECOIN_RAILS_MODE", &["rails", "mode"], EnvKind::Str),
    (
        "STABLECOIN_RAILS_EVM_CHAINS",
        &["rails", "evm_chains"],
        EnvKind::IntList,
    ),
    (
        "STABLECOIN_RAILS_PRIMARY_EVM_CHAIN",
        &["rails", "primary_evm_chain"],
        EnvKind::Int,
    ),
    ("STABLECOIN_RAILS_TRON", &["rails", "tron"], EnvKind::Bool),
    (
        "STABLECOIN_SOLANA_RPC_URL",
        &["rails", "solana_node", "rpc_url"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_SOLANA_SCAN_ENABLED",
        &["rails", "solana_node", "scan_enabled"],
        EnvKind::Bool,
    ),
    (
        "STABLECOIN_SOLANA_SENDS_ENABLED",
        &["rails", "solana_node", "sends_enabled"],
        EnvKind::Bool,
    ),
    (
        "STABLECOIN_RAILS_SOLANA",
        &["rails", "solana"],
        EnvKind::Bool,
    ),
    (
        "STABLECOIN_SIM_TREASURY_FLOAT",
        &["sim", "treasury_float"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_SIM_CHAIN_URL",
        &["sim", "chain_url"],
        EnvKind::Str,
    ),
    ("STABLECOIN_DEMO", &["demo", "enabled"], EnvKind::Bool),
    (
        "STABLECOIN_WEBHOOKS_ALLOW_LOOPBACK_HTTP",
        &["webhooks_allow_loopback_http"],
        EnvKind::Bool,
    ),
    ("STABLECOIN_METRICS_TOKEN", &["metrics_token"], EnvKind::Str),
    ("STABLECOIN_ADMIN_TOKEN", &["admin", "token"], EnvKind::Str),
    (
        "STABLECOIN_PUBLIC_URL",
        &["consoles", "public_url"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_TRUSTED_PROXIES",
        &["consoles", "trusted_proxies"],
        EnvKind::StrList,
    ),
    (
        "STABLECOIN_SIGN_IN_MAX_FAILURES",
        &["consoles", "sign_in_max_failures"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_SIGN_IN_LOCKOUT_S",
        &["consoles", "sign_in_lockout_s"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_ADMIN_TOPUP_TTL_HOURS",
        &["admin", "topup_ttl_hours"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_ADMIN_SECOND_APPROVAL_ABOVE",
        &["admin", "second_approval_above"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_ADMIN_TOPUP_SINGLE_APPROVAL_MAX",
        &["admin", "topup_single_approval_max"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_HTTP_HEADER_READ_TIMEOUT_MS",
        &["http", "header_read_timeout_ms"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_HTTP_REQUEST_TIMEOUT_MS",
        &["http", "request_timeout_ms"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_HTTP_MAX_CONNECTIONS",
        &["http", "max_connections"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_RATE_LIMITS",
        &["rate_limits", "enabled"],
        EnvKind::Bool,
    ),
    (
        "STABLECOIN_RATE_LIMIT_WINDOW_S",
        &["rate_limits", "window_s"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_RATE_LIMIT_MONEY",
        &["rate_limits", "money"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_RATE_LIMIT_WRITE",
        &["rate_limits", "write"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_RATE_LIMIT_READ",
        &["rate_limits", "read"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_OTP_MAX_FAILED_ATTEMPTS",
        &["otp", "max_failed_attempts"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_OTP_LOCKOUT_MS",
        &["otp", "lockout_ms"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_OTP_MAX_REQUESTS_PER_WALLET",
        &["otp", "max_requests_per_subject"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_OTP_MAX_REQUESTS_PER_PHONE",
        &["otp", "max_requests_per_phone"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_OTP_MAX_REQUESTS_PER_TENANT",
        &["otp", "max_requests_per_tenant"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_MIN_SEND_EVM",
        &["limits", "min_send_evm"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_MIN_SEND_TRON",
        &["limits", "min_send_tron"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_MIN_SEND_SOLANA",
        &["limits", "min_send_solana"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_RENT_QUOTA_PER_TENANT",
        &["limits", "rent_quota_per_tenant"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_ENGINE_PAYMENT_VALIDITY_MS",
        &["engine", "payment_validity_ms"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_WEBHOOKS_ALLOW_NETWORKS",
        &["webhooks", "allow_networks"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_WEBHOOKS_TIMEOUT_MS",
        &["webhooks", "timeout_ms"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_WEBHOOKS_CONCURRENCY",
        &["webhooks", "concurrency"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_WEBHOOKS_ENDPOINT_CONCURRENCY",
        &["webhooks", "endpoint_concurrency"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_WEBHOOKS_TENANT_CONCURRENCY",
        &["webhooks", "tenant_concurrency"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_CHECKOUT_INTAKE_SECRET",
        &["checkout", "intake_secret"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_ESCROW_DEPOSITS_ENABLED",
        &["escrow", "deposits_enabled"],
        EnvKind::Bool,
    ),
    (
        "STABLECOIN_RECONCILIATION",
        &["reconciliation", "enabled"],
        EnvKind::Bool,
    ),
    (
        "STABLECOIN_RECONCILIATION_INTERVAL_MS",
        &["reconciliation", "interval_ms"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_RETENTION",
        &["retention", "enabled"],
        EnvKind::Bool,
    ),
    (
        "STABLECOIN_RETENTION_INTERVAL_MS",
        &["retention", "interval_ms"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_RETENTION_IDEMPOTENCY_HOURS",
        &["retention", "idempotency_hours"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_RETENTION_QUOTES_HOURS",
        &["retention", "quotes_hours"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_RETENTION_CHALLENGES_HOURS",
        &["retention", "challenges_hours"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_RETENTION_WEBHOOK_EVENTS_HOURS",
        &["retention", "webhook_events_hours"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_RETENTION_PAYOUT_RESULTS_HOURS",
        &["retention", "payout_results_hours"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_DEMO_TENANT_NAME",
        &["demo", "tenant_name"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_DEMO_TREASURY_CREDIT",
        &["demo", "treasury_credit"],
        EnvKind::Str,
    ),
];

/// Every environment variable the spec names (`SOLANA_SCAN_ENABLED`, spec 1.5), and the
/// `STABLECOIN_*` variable it is an alias of: the spec's name works beside the prefixed
/// form, setting the same key. Precedence: the prefixed form is authoritative; both set
/// to the same value is accepted, both set to different values refuses to start
/// (`ConfigError::Env` naming both), since guessing which one the operator meant could
/// silently turn receipt monitoring on or off.
const SPEC_ALIASES: &[(&str, &str)] = &[("SOLANA_SCAN_ENABLED", "STABLECOIN_SOLANA_SCAN_ENABLED")];

/// The spec's names of environment variables and the prefixed variable each aliases.
pub fn spec_env_aliases() -> impl Iterator<Item = (&'static str, &'static str)> {
    SPEC_ALIASES.iter().copied()
}

/// The spec's alias of a prefixed variable, if the spec names one.
fn spec_alias(prefixed: &str) -> Option<&'static str> {
    SPEC_ALIASES
        .iter()
        .find(|(_, p)| *p == prefixed)
        .map(|(alias, _)| *alias)
}

/// The environment variables the server reads (besides `STABLECOIN_CONFIG`): every
/// `STABLECOIN_*` variable, then the spec's names that alias some of them.
pub fn env_var_names() -> impl Iterator<Item = &'static str> {
    ENV.iter()
        .map(|(name, _, _)| *name)
        .chain(SPEC_ALIASES.iter().map(|(alias, _)| *alias))
}

/// The value of `var` from the environment, or from its spec alias (see
/// [`SPEC_ALIASES`] for the precedence), parsed as `kind`.
fn env_lookup(
    env: &impl Fn(&str) -> Option<String>,
    var: &'static str,
    kind: EnvKind,
) -> Result<Option<toml::Value>, ConfigError> {
    let prefixed = env(var)
        .map(|raw| env_value(var, &raw, kind).map(|v| (raw, v)))
        .transpose()?;
    let aliased = match spec_alias(var) {
        Some(alias) => env(alias)
            .map(|raw| env_value(alias, &raw, kind).map(|v| (alias, raw, v)))
            .transpose()?,
        None => None,
    };
    Ok(match (prefixed, aliased) {
        (Some((raw, v)), Some((alias, alias_raw, alias_v))) => {
            if v != alias_v {
                return Err(ConfigError::Env {
                    var,
                    error: format!(
                        "{var}={raw:?} conflicts with {alias}={alias_raw:?} (the spec's name of the same setting); set one of them, or both to the same value"
                    ),
                });
            }
            Some(v)
        }
        (Some((_, v)), None) => Some(v),
        (None, Some((_, _, v))) => Some(v),
        (None, None) => None,
    })
}

fn env_value(var: &'static str, raw: &str, kind: EnvKind) -> Result<toml::Value, ConfigError> {
    let err = |e: &str| ConfigError::Env {
        var,
        error: e.to_string(),
    };
    let int = |s: &str| {
        s.trim()
            .parse::<i64>()
            .map_err(|_| err(&format!("expected an integer, got {s:?}")))
    };
    Ok(match kind {
        EnvKind::Str => toml::Value::String(raw.to_string()),
        EnvKind::Int => toml::Value::Integer(int(raw)?),
        EnvKind::Bool => match raw.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => toml::Value::Boolean(true),
            "0" | "false" | "no" | "off" => toml::Value::Boolean(false),
            other => return Err(err(&format!("expected true or false, got {other:?}"))),
        },
        EnvKind::IntList => toml::Value::Array(
            raw.split(',')
                .filter(|s| !s.trim().is_empty())
                .map(|s| int(s).map(toml::Value::Integer))
                .collect::<Result<_, _>>()?,
        ),
        EnvKind::StrList => toml::Value::Array(
            raw.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| toml::Value::String(s.to_string()))
                .collect(),
        ),
    })
}

impl Config {
    /// Loads defaults, then `file` (if any), then the environment as read by `env`.
    pub fn load(
        file: Option<&Path>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let (mut table, origin) = match file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
                    path: path.display().to_string(),
                    error: e.to_string(),
                })?;
                let table: toml::Table = toml::from_str(&text).map_err(|e| ConfigError::Parse {
                    path: path.display().to_string(),
                    error: e.to_string(),
                })?;
                (table, path.display().to_string())
            }
            None => (toml::Table::new(), "(defaults)".to_string()),
        };
        let mut from_env = false;
        for (var, path, kind) in ENV {
            let Some(value) = env_lookup(&env, var, *kind)? else {
                continue;
            };
            from_env = true;
            let mut t = &mut table;
            for key in &path[..path.len() - 1] {
                let entry = t
                    .entry(key.to_string())
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                t = match entry {
                    toml::Value::Table(inner) => inner,
                    _ => {
                        return Err(ConfigError::Invalid(format!(
                            "{var}: `{key}` is not a table in the config file"
                        )));
                    }
                };
            }
            t.insert(path[path.len() - 1].to_string(), value);
        }
        let origin = if from_env {
            format!("{origin} + environment")
        } else {
            origin
        };
        default_storage_kind(&mut table)?;
        let config: Config =
            Config::deserialize(toml::Value::Table(table)).map_err(|e| ConfigError::Parse {
                path: origin,
                error: e.to_string(),
            })?;
        config.validate()?;
        Ok(config)
    }

    /// Loads from the process environment.
    pub fn from_env(file: Option<&Path>) -> Result<Config, ConfigError> {
        Config::load(file, |k| std::env::var(k).ok())
    }
}

/// A `[storage]` section (or a `STABLECOIN_SQLITE_*` variable) without `kind` means the
/// default storage, SQLite: `STABLECOIN_SQLITE_MAX_BACKGROUND=1` alone must tune the
/// default store, not fail on a missing field. PostgreSQL settings without the kind are
/// refused with the setting that is missing (guessing would pick a database silently).
fn default_storage_kind(table: &mut toml::Table) -> Result<(), ConfigError> {
    let Some(toml::Value::Table(storage)) = table.get_mut("storage") else {
        return Ok(());
    };
    if storage.contains_key("kind") {
        return Ok(());
    }
    if storage.contains_key("url") || storage.contains_key("connect_timeout_secs") {
        return Err(ConfigError::Invalid(
            "storage: PostgreSQL settings without storage.kind; set storage.kind = \"postgres\" (STABLECOIN_STORAGE=postgres)".into(),
        ));
    }
    storage.insert("kind".into(), toml::Value::String("sqlite".into()));
    Ok(())
}
