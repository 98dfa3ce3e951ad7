//! The `stablecoin-server` command line: `serve`, `migrate` and admin commands that work
//! against the configured storage.

use crate::app::App;
use crate::config::Config;
use clap::{Args, Parser, Subcommand, ValueEnum};

mod escrow;
mod logging;
pub use escrow::{EscrowCommand, run_escrow_admin};
use serde_json::json;
use stablecoin_core::CoreError;
use stablecoin_core::domain::fees::TenantPricing;
use stablecoin_core::domain::ids::{ApiKeyId, TenantId};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::topup::TopUpConfirmation;
use stablecoin_core::engine::{Engine, KeyKind, KeyMode, StaffIdentity};
use stablecoin_core::ports::ChainAddress;
use std::path::PathBuf;

/// The parsed command line: a global `--config` and an optional command (`serve` when
/// absent).
#[derive(Debug, Parser)]
#[command(
    name = "stablecoin-server",
    version,
    about = "Reference server of the stablecoin SDK",
    long_about = "Reference server of the stablecoin SDK. With no configuration at all, `serve` starts on the default storage with simulated rails and a demo tenant. Settings come from a TOML file (--config / STABLECOIN_CONFIG) and STABLECOIN_* environment variables."
)]
pub struct Cli {
    /// TOML configuration file.
    #[arg(long, global = true, env = "STABLECOIN_CONFIG")]
    pub config: Option<PathBuf>,
    /// The command to run; `serve` when absent.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The commands of the binary; all but `serve` and `migrate` are admin commands
/// (`run_admin`) that work directly against the configured storage.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP API and the background workers (the default command).
    Serve,
    /// Bring the storage schema up to date.
    Migrate,
    /// Validate the configuration (file and environment) without starting anything:
    /// exit 0 and a summary when it is valid, 2 and every reason when it is not.
    CheckConfig,
    /// Host the simulated chains the configuration enables, for several servers to share
    /// (each with `[sim] chain_url` pointing here): keyed by the configuration's master
    /// seed (or signer), the treasury float minted once, at start. Listens on 127.0.0.1
    /// only; stops on SIGINT or SIGTERM, and its chains (kept in memory) with it.
    SimChain {
        /// Where to listen: 127.0.0.1 and a port (0 picks a free one; the address is
        /// printed).
        #[arg(long, default_value = "127.0.0.1:9650")]
        listen: std::net::SocketAddr,
    },
    /// Tenants.
    #[command(subcommand)]
    Tenant(TenantCommand),
    /// API keys.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Tenant treasuries.
    #[command(subcommand)]
    Treasury(TreasuryCommand),
    /// Top-ups (money in): staff confirmation that a top-up's fiat arrived.
    #[command(subcommand)]
    Topup(TopupCommand),
    /// Tenant pricing (the tenant's own transfer fee).
    #[command(subcommand)]
    Pricing(PricingCommand),
    /// Checkout businesses.
    #[command(subcommand)]
    Business(BusinessCommand),
    /// Service staff accounts (their secrets open the `/admin/v1/` routes).
    #[command(subcommand)]
    Staff(StaffCommand),
    /// Escrow deals that need staff: disputes and recoveries.
    #[command(subcommand)]
    Escrow(EscrowCommand),
}

/// `staff ...`: service staff accounts.
#[derive(Debug, Subcommand)]
pub enum StaffCommand {
    /// Create a staff account; its secret (stf_sk_...) is printed once.
    Create {
        /// Display name, 1 to 100 characters, unique.
        #[arg(long)]
        name: String,
    },
    /// List every staff account (never a secret).
    List,
    /// Disable a staff account for good; its secret is refused from then on.
    Disable {
        /// The account (stf_...).
        #[arg(long)]
        id: String,
    },
}

/// `business ...`: checkout businesses (a tenant's checkout identities).
#[derive(Debug, Subcommand)]
pub enum BusinessCommand {
    /// Create a business with its live and test keys; the keys are printed once.
    Create {
        /// The owning tenant (ten_...).
        #[arg(long)]
        tenant: String,
        /// Shown to payers on the payment page, 1 to 100 characters.
        #[arg(long)]
        name: String,
    },
}

/// `tenant ...`: tenant administration.
#[derive(Debug, Subcommand)]
pub enum TenantCommand {
    /// Create a tenant; prints its id.
    Create {
        /// Display name of the tenant, 1 to 200 characters.
        #[arg(long)]
        name: String,
    },
    /// Put a tenant's account in test mode (`--enabled true`: every key of it acts as a
    /// test key, live keys mutate nothing live) or take it out (`--enabled false`).
    /// Audited as `test_mode.set` by `cli`.
    TestMode {
        /// The tenant (ten_...).
        #[arg(long)]
        tenant: String,
        /// `true` or `false`.
        #[arg(long, action = clap::ArgAction::Set)]
        enabled: bool,
    },
}

/// The kind of API key `key issue` creates.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum KindArg {
    /// svc_sk_* (wallet, transfer, FX, escrow API).
    Tenant,
    /// live_sk_ / test_sk_ (checkout list).
    Business,
}

/// Whether `key issue` creates a live key or a sandbox (test) key.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ModeArg {
    /// svc_sk_live_* / live_sk_*: acts on real rails and real value.
    Live,
    /// svc_sk_test_* / test_sk_*: the sandbox; never moves money.
    Test,
}

/// `key ...`: API key administration.
#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Issue a key; the secret is printed once and only its hash is stored.
    Issue {
        /// The tenant that will own the key (ten_...).
        #[arg(long)]
        tenant: String,
        /// The API the key opens.
        #[arg(long, value_enum, default_value = "tenant")]
        kind: KindArg,
        /// Whether the key moves real value.
        #[arg(long, value_enum, default_value = "test")]
        mode: ModeArg,
    },
    /// Revoke a key by id (`key_...`).
    Revoke {
        /// The tenant that owns the key (ten_...).
        #[arg(long)]
        tenant: String,
        /// The key to revoke (key_...); requests with it are refused from then on.
        #[arg(long = "key-id")]
        key_id: String,
    },
}

/// The environment variable the staff commands read a staff account's secret from
/// (`stf_sk_...`); without it they read one line from standard input. Never a
/// command-line argument: other users of the machine can read a process's arguments.
pub const STAFF_SECRET_ENV: &str = "STABLECOIN_STAFF_SECRET";

/// `treasury ...`: tenant treasury administration.
#[derive(Debug, Subcommand)]
pub enum TreasuryCommand {
    /// Credit a tenant's treasury after its fiat was received (idempotent by reference),
    /// as the staff account whose secret is in STABLECOIN_STAFF_SECRET (or on standard
    /// input). Above `[admin] topup_single_approval_max` the first staff member's call is
    /// a proposal; a different staff member repeating it credits. Audited.
    Credit(CreditArgs),
}

/// Arguments of `treasury credit`.
#[derive(Debug, Args)]
pub struct CreditArgs {
    /// The tenant whose treasury is credited (ten_...).
    #[arg(long)]
    pub tenant: String,
    /// USDC or USDT.
    #[arg(long)]
    pub token: String,
    /// Token amount, up to 6 decimal places.
    #[arg(long)]
    pub amount: String,
    /// The fiat receipt's reference (crediting it twice moves value once).
    #[arg(long)]
    pub reference: String,
}

/// `topup ...`: top-up administration by service staff.
#[derive(Debug, Subcommand)]
pub enum TopupCommand {
    /// Confirm that a top-up's fiat arrived: credits the tenant's treasury with the
    /// quoted token amount, once (a second confirmation is refused: ALREADY_CONFIRMED),
    /// as the staff account whose secret is in STABLECOIN_STAFF_SECRET (or on standard
    /// input). Above `[admin] topup_single_approval_max` the first confirmation is a
    /// proposal; a different staff member's confirmation credits. Audited.
    Confirm(TopupConfirmArgs),
}

/// Arguments of `topup confirm`.
#[derive(Debug, Args)]
pub struct TopupConfirmArgs {
    /// The top-up (tu_...).
    pub id: String,
    /// The fiat receipt's reference (bank or mobile-money transaction id); one
    /// reference confirms one top-up.
    #[arg(long)]
    pub reference: String,
    /// An optional note for the audit trail.
    #[arg(long)]
    pub note: Option<String>,
}

/// `pricing ...`: tenant pricing administration.
#[derive(Debug, Subcommand)]
pub enum PricingCommand {
    /// Set the tenant's fee: PERCENTAGE (fee_bps <= 1000, cap), FLAT, or NONE.
    Set(PricingArgs),
}

/// Arguments of `pricing set`; which fee fields are allowed depends on `--mode`.
#[derive(Debug, Args)]
pub struct PricingArgs {
    /// The tenant whose pricing is set (ten_...).
    #[arg(long)]
    pub tenant: String,
    /// PERCENTAGE, FLAT or NONE.
    #[arg(long)]
    pub mode: String,
    /// PERCENTAGE only (required there): the fee in basis points, at most 1000 (10%).
    #[arg(long = "fee-bps")]
    pub fee_bps: Option<u32>,
    /// PERCENTAGE only: the most the fee may be, in micro-units (0 or absent: uncapped).
    #[arg(long = "fee-cap-micros")]
    pub fee_cap_micros: Option<u64>,
    /// FLAT only (required there): the fee per transfer in micro-units.
    #[arg(long = "fee-flat-micros")]
    pub fee_flat_micros: Option<u64>,
    /// EVM address the tenant controls, where its fee is paid (required unless NONE).
    #[arg(long = "fee-address")]
    pub fee_address: Option<String>,
}

fn tenant_id(s: &str) -> Result<TenantId, CoreError> {
    TenantId::parse(s.trim()).ok_or_else(|| CoreError::InvalidParameter {
        field: "tenant",
        reason: "expected a tenant id such as ten_01J...".into(),
    })
}

impl Command {
    /// True for the commands that act as a staff account and need its secret
    /// ([`STAFF_SECRET_ENV`]): the ones that move money.
    pub fn needs_staff(&self) -> bool {
        matches!(
            self,
            Command::Treasury(_)
                | Command::Topup(_)
                | Command::Escrow(EscrowCommand::Resolve { .. } | EscrowCommand::Recover { .. })
        )
    }
}

/// The staff account whose secret is `secret`, proven against the store: the CLI acts
/// only as a staff account that proved itself, never as a name (an account's secret is
/// what the audit log's `stf_...` id stands for). INVALID_PARAMETER (`staff_secret`)
/// without a secret; INVALID_API_KEY for one that is no staff account's;
/// API_KEY_REVOKED for a disabled account.
pub async fn prove_staff(
    engine: &Engine,
    secret: Option<&str>,
) -> Result<StaffIdentity, CoreError> {
    let Some(secret) = secret.map(str::trim).filter(|s| !s.is_empty()) else {
        return Err(CoreError::InvalidParameter {
            field: "staff_secret",
            reason: format!(
                "this command acts as a staff account: put its secret (stf_sk_...) in {STAFF_SECRET_ENV} or on standard input"
            ),
        });
    };
    Ok(engine.authenticate_staff(secret).await?.identity())
}

/// Reads the staff secret of a command that needs one: [`STAFF_SECRET_ENV`], else the
/// first line of standard input (prompted for on a terminal).
fn read_staff_secret() -> Option<String> {
    use std::io::{BufRead, IsTerminal, Write};
    if let Ok(s) = std::env::var(STAFF_SECRET_ENV)
        && !s.trim().is_empty()
    {
        return Some(s);
    }
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        let mut err = std::io::stderr();
        let _ = write!(err, "staff secret (stf_sk_...): ");
        let _ = err.flush();
    }
    let mut line = String::new();
    stdin.lock().read_line(&mut line).ok()?;
    Some(line.trim().to_string()).filter(|s| !s.is_empty())
}

/// Runs an admin command on an engine; the JSON result is what the CLI prints.
/// `staff_secret` is the acting staff account's secret, for the commands that
/// [`Command::needs_staff`].
pub async fn run_admin(
    engine: &Engine,
    cmd: &Command,
    staff_secret: Option<&str>,
) -> Result<serde_json::Value, CoreError> {
    match cmd {
        Command::Tenant(TenantCommand::Create { name }) => {
            let t = engine.create_tenant(name).await?;
            Ok(json!({"tenant_id": t.id.0, "name": t.name}))
        }
        Command::Tenant(TenantCommand::TestMode { tenant, enabled }) => {
            let t = engine
                .set_test_mode_as(
                    stablecoin_core::engine::STAFF_ACTOR_CLI,
                    &tenant_id(tenant)?,
                    *enabled,
                )
                .await?;
            Ok(json!({"tenant_id": t.id.0, "test_mode": t.test_mode}))
        }
        Command::Key(KeyCommand::Issue { tenant, kind, mode }) => {
            let kind = match kind {
                KindArg::Tenant => KeyKind::Tenant,
                KindArg::Business => KeyKind::Business,
            };
            let mode = match mode {
                ModeArg::Live => KeyMode::Live,
                ModeArg::Test => KeyMode::Test,
            };
            let k = engine
                .issue_api_key(&tenant_id(tenant)?, kind, mode)
                .await?;
            Ok(json!({
                "key_id": k.key.id.0,
                "tenant_id": k.key.tenant.0,
                "kind": kind,
                "mode": mode,
                "secret": k.secret,
                "note": "the secret is shown only now; only its hash is stored",
            }))
        }
        Command::Business(BusinessCommand::Create { tenant, name }) => {
            let checkout = stablecoin_checkout::CheckoutEngine::new(
                engine.kernel(),
                stablecoin_checkout::CheckoutConfig::default(),
            )
            .map_err(|e| CoreError::Storage(e.to_string()))?;
            let b = checkout
                .create_business(&tenant_id(tenant)?, name)
                .await
                .map_err(|e| match e {
                    stablecoin_checkout::CheckoutError::InvalidParameter { field, reason } => {
                        CoreError::InvalidParameter { field, reason }
                    }
                    other => CoreError::Storage(other.to_string()),
                })?;
            Ok(json!({
                "business_id": b.business.id,
                "tenant_id": tenant.trim(),
                "name": b.business.name,
                "live_key": b.live_key,
                "test_key": b.test_key,
                "note": "the keys are shown only now; only their hashes are stored",
            }))
        }
        Command::Key(KeyCommand::Revoke { tenant, key_id }) => {
            let k = engine
                .revoke_api_key(&tenant_id(tenant)?, &ApiKeyId(key_id.trim().to_string()))
                .await?;
            Ok(json!({"key_id": k.id.0, "revoked": k.revoked_at.is_some()}))
        }
        Command::Treasury(TreasuryCommand::Credit(a)) => {
            let token: Token = a.token.trim().parse()?;
            let amount = Micros::parse_positive(&a.amount)?;
            let t = tenant_id(&a.tenant)?;
            let staff = prove_staff(engine, staff_secret).await?;
            let v = engine
                .credit_treasury_as_staff(&staff, &t, token, amount, &a.reference)
                .await?;
            serde_json::to_value(v).map_err(|e| CoreError::Storage(e.to_string()))
        }
        Command::Topup(TopupCommand::Confirm(a)) => {
            let staff = prove_staff(engine, staff_secret).await?;
            let v = engine
                .confirm_topup(
                    a.id.trim(),
                    &staff,
                    TopUpConfirmation {
                        fiat_reference: a.reference.clone(),
                        note: a.note.clone(),
                    },
                )
                .await?;
            let token: Token = v.token.parse()?;
            let tenant = tenant_id(v.tenant_id.as_deref().unwrap_or_default())?;
            let balance = engine.treasury_balance(&tenant, token).await?;
            Ok(json!({
                "topup": v,
                "treasury_balance": balance.to_decimal_string(),
            }))
        }
        Command::Staff(StaffCommand::Create { name }) => {
            let s = engine.create_staff(name).await?;
            Ok(json!({
                "staff_id": s.account.id,
                "name": s.account.name,
                "secret": s.secret,
                "note": "the secret is shown only now; only its hash is stored. Use it as Authorization: Bearer <secret> on /admin/v1/",
            }))
        }
        Command::Staff(StaffCommand::List) => {
            let list = engine.list_staff().await?;
            Ok(json!({
                "staff": list
                    .iter()
                    .map(|a| json!({
                        "staff_id": a.id,
                        "name": a.name,
                        "hint": a.hint,
                        "created_at": a.created_at.to_rfc3339(),
                        "disabled_at": a.disabled_at.map(|t| t.to_rfc3339()),
                    }))
                    .collect::<Vec<_>>(),
            }))
        }
        Command::Staff(StaffCommand::Disable { id }) => {
            let a = engine.disable_staff(id).await?;
            Ok(json!({"staff_id": a.id, "disabled": !a.is_active()}))
        }
        Command::Escrow(_) => Err(CoreError::InvalidParameter {
            field: "command",
            reason: "escrow commands need the escrow engine (run_escrow_admin)".into(),
        }),
        Command::Pricing(PricingCommand::Set(a)) => {
            let pricing = TenantPricing::from_parts(
                a.mode.trim(),
                a.fee_bps,
                a.fee_cap_micros,
                a.fee_flat_micros,
            )?;
            let t = engine
                .set_pricing(
                    &tenant_id(&a.tenant)?,
                    pricing,
                    a.fee_address.clone().map(ChainAddress),
                )
                .await?;
            Ok(json!({
                "tenant_id": t.id.0,
                "pricing": t.pricing,
                "fee_address": t.fee_address,
            }))
        }
        Command::Serve | Command::Migrate | Command::CheckConfig | Command::SimChain { .. } => {
            Err(CoreError::InvalidParameter {
                field: "command",
                reason: "not an admin command".into(),
            })
        }
    }
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
    tracing::info!("shutdown signal received: finishing in-flight requests and the worker tick");
}

/// The binary's entry point; returns the process exit code.
pub async fn main() -> i32 {
    let cli = Cli::parse();
    let config = match Config::from_env(cli.config.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let command = cli.command.unwrap_or(Command::Serve);
    match command {
        Command::Serve => {
            logging::init(&config, "info");
            serve(config).await
        }
        Command::CheckConfig => {
            if let Some(reason) = config.shared_chain_refusal() {
                eprintln!("error: invalid configuration: {reason}");
                return 2;
            }
            println!("{}", config.summary());
            0
        }
        Command::SimChain { listen } => {
            logging::init(&config, "info");
            sim_chain(config, listen).await
        }
        Command::Migrate => {
            logging::init(&config, "warn");
            match crate::storage::migrate(&config.storage, &config.data_dir).await {
                Ok(msg) => {
                    println!("{msg}");
                    0
                }
                Err(e) => {
                    logging::print_error(e);
                    1
                }
            }
        }
        admin => {
            logging::init(&config, "warn");
            if !config.storage.is_durable() {
                eprintln!(
                    "error: storage `memory` does not persist, so an admin command would act on an empty store that vanishes when it exits; configure sqlite or postgres storage (storage.kind / STABLECOIN_STORAGE)"
                );
                return 2;
            }
            let mut admin_config = config.clone();
            admin_config.demo.enabled = false;
            let options = crate::app::BuildOptions {
                allow_per_process_chains: true,
                ..Default::default()
            };
            let app = match App::build_with(admin_config, options).await {
                Ok(a) => a,
                Err(e) => {
                    logging::print_error(e);
                    return 1;
                }
            };
            let secret = if admin.needs_staff() {
                read_staff_secret()
            } else {
                None
            };
            let secret = secret.as_deref();
            let result = match &admin {
                Command::Escrow(cmd) => {
                    run_escrow_admin(app.engine(), app.state().escrow.as_ref(), cmd, secret).await
                }
                other => run_admin(app.engine(), other, secret).await,
            };
            match result {
                Ok(v) => {
                    println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
                    0
                }
                Err(e) => {
                    logging::print_error(format!("{} ({})", e, e.code()));
                    1
                }
            }
        }
    }
}

/// `sim-chain`: the shared simulated chains until SIGINT or SIGTERM.
async fn sim_chain(config: Config, listen: std::net::SocketAddr) -> i32 {
    use stablecoin_rails::sim::http::bind_loopback;
    // Bound first: a refused address costs nothing, and the port is taken before the
    // float is minted.
    let listener = match bind_loopback(listen).await {
        Ok(l) => l,
        Err(e) => {
            logging::print_error(format!("cannot listen on {listen}: {e}"));
            return 2;
        }
    };
    let custody = match crate::custody::Custody::build(&config, config.storage.is_durable()).await {
        Ok(c) => c,
        Err(e) => {
            logging::print_error(e);
            return 1;
        }
    };
    let clock = std::sync::Arc::new(stablecoin_core::memory::SystemClock);
    let server = match crate::rails::sim_chain_server(&config, custody.signer, clock).await {
        Ok(s) => s,
        Err(e) => {
            logging::print_error(e);
            return 1;
        }
    };
    let bound = listener.local_addr().unwrap_or(listen);
    let names: Vec<String> = server.hosted().into_iter().map(|c| c.name).collect();
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "stablecoin-server sim-chain listening on http://{bound} (chains: {}; treasury float {} of USDC and USDT minted on each)\n  servers: [sim] chain_url = \"http://{bound}\"",
            names.join(", "),
            config.sim.treasury_float
        );
        let _ = out.flush();
    }
    match server.serve(listener, shutdown_signal()).await {
        Ok(()) => 0,
        Err(e) => {
            logging::print_error(e);
            1
        }
    }
}

async fn serve(config: Config) -> i32 {
    let addr = match config.listen_addr() {
        Ok(a) => a,
        Err(e) => {
            logging::print_error(e);
            return 2;
        }
    };
    let app = match App::build(config).await {
        Ok(a) => a,
        Err(e) => {
            logging::print_error(e);
            return 1;
        }
    };
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: cannot listen on {addr}: {e}");
            return 1;
        }
    };
    let bound = listener.local_addr().unwrap_or(addr);
    {
        // A closed stdout must not stop the server (println! would panic).
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", app.banner(bound));
        let _ = out.flush();
    }
    match app.serve(listener, shutdown_signal()).await {
        Ok(()) => 0,
        Err(e) => {
            logging::print_error(e);
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
        let c = Cli::try_parse_from([
            "stablecoin-server",
            "pricing",
            "set",
            "--tenant",
            "ten_x",
            "--mode",
            "FLAT",
            "--fee-flat-micros",
            "5",
        ])
        .unwrap();
        assert!(matches!(c.command, Some(Command::Pricing(_))));
        let c = Cli::try_parse_from(["stablecoin-server"]).unwrap();
        assert!(c.command.is_none(), "no command means serve");
    }

    #[tokio::test]
    async fn business_create_prints_two_keys_that_authenticate_for_the_business() {
        let config = crate::config::Config {
            storage: crate::config::StorageConfig::Memory,
            master_seed: Some(crate::config::Secret::new("07".repeat(32))),
            ..Default::default()
        };
        let app = crate::App::build(config).await.unwrap();
        let engine = app.engine();
        let t = engine.create_tenant("Shop").await.unwrap();
        let cmd = Command::Business(BusinessCommand::Create {
            tenant: t.id.0.clone(),
            name: "Corner Shop".into(),
        });
        let out = run_admin(engine, &cmd, None).await.unwrap();
        let id = out["business_id"].as_str().unwrap();
        for (key, prefix) in [("live_key", "live_sk_"), ("test_key", "test_sk_")] {
            let secret = out[key].as_str().unwrap();
            assert!(secret.starts_with(prefix));
            let auth = engine.authenticate(secret).await.unwrap();
            assert_eq!(auth.business.as_deref(), Some(id));
        }
        let bad = Command::Business(BusinessCommand::Create {
            tenant: t.id.0.clone(),
            name: " ".into(),
        });
        assert_eq!(
            run_admin(engine, &bad, None).await.unwrap_err().code(),
            "INVALID_PARAMETER"
        );
    }
}
