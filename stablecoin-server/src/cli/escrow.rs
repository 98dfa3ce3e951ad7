//! `escrow ...`: the escrow staff work of the staff console and `/admin/v1/escrows`,
//! from the command line, against the configured storage. Every mutation acts as a
//! named, active staff account and is audited under its id.

use clap::Subcommand;
use stablecoin_core::CoreError;
use stablecoin_core::engine::Engine;

/// `escrow ...`: escrow staff work from the command line.
#[derive(Debug, Subcommand)]
pub enum EscrowCommand {
    /// The deals that need staff (DISPUTED, or holding a recoverable balance), of every
    /// tenant, newest first.
    Disputes {
        /// 1 to 100.
        #[arg(long, default_value_t = 20)]
        limit: u32,
        /// From 1.
        #[arg(long, default_value_t = 1)]
        page: u32,
    },
    /// Resolve a DISPUTED deal as a staff account (audited under its id).
    Resolve {
        /// The escrow (esc_...).
        #[arg(long)]
        id: String,
        /// RELEASE (to the seller) or REFUND (to the buyer).
        #[arg(long)]
        resolution: String,
        /// The recorded reasoning (resolution_note).
        #[arg(long)]
        note: String,
        /// The acting staff account: its id (stf_...) or name; it must be active.
        #[arg(long)]
        staff: String,
    },
    /// Return a whole recoverable balance of one kind to the buyer's linked wallet as a
    /// staff account (audited under its id).
    Recover {
        /// The escrow (esc_...).
        #[arg(long)]
        id: String,
        /// PARTIAL, EXCESS, LATE or UNSUPPORTED_TOKEN.
        #[arg(long)]
        kind: String,
        /// The token, when the deal holds that kind in more than one.
        #[arg(long)]
        token: Option<String>,
        /// Why (recorded with the payout and in the audit log).
        #[arg(long)]
        note: String,
        /// The acting staff account: its id (stf_...) or name; it must be active.
        #[arg(long)]
        staff: String,
    },
    /// A deal of any tenant with its whole history, newest first.
    History {
        /// The escrow (esc_...).
        #[arg(long)]
        id: String,
        /// 1 to 100.
        #[arg(long, default_value_t = 100)]
        limit: u32,
        /// From 1.
        #[arg(long, default_value_t = 1)]
        page: u32,
    },
}

fn escrow_err(e: stablecoin_escrow::EscrowError) -> CoreError {
    use stablecoin_escrow::EscrowError as E;
    match e {
        E::InvalidParameter { field, reason } | E::MissingParameter { field, reason } => {
            CoreError::InvalidParameter { field, reason }
        }
        E::NotFound { kind, id, .. } => CoreError::NotFound { kind, id },
        other => CoreError::InvalidParameter {
            field: "escrow",
            reason: format!("{other} ({})", other.code()),
        },
    }
}

/// Runs an `escrow ...` command. A resolution acts as the named staff account (which
/// must be active) and is written to the staff audit log under its id, like one made
/// over HTTP.
pub async fn run_escrow_admin(
    engine: &Engine,
    escrow: Option<&stablecoin_escrow::EscrowEngine>,
    cmd: &EscrowCommand,
) -> Result<serde_json::Value, CoreError> {
    let escrow = escrow.ok_or_else(|| CoreError::InvalidParameter {
        field: "escrow",
        reason: "escrow is unavailable: the TRON rail is disabled in this configuration".into(),
    })?;
    let admin = escrow.admin();
    match cmd {
        EscrowCommand::Disputes { limit, page } => {
            let cli = stablecoin_escrow::StaffActor::new(stablecoin_core::engine::STAFF_ACTOR_CLI)
                .map_err(escrow_err)?;
            let list = admin
                .attention(&cli, Some(*limit), Some(*page))
                .await
                .map_err(escrow_err)?;
            serde_json::to_value(list).map_err(|e| CoreError::Storage(e.to_string()))
        }
        EscrowCommand::Resolve {
            id,
            resolution,
            note,
            staff,
        } => {
            let (account, actor) = active_staff(engine, staff).await?;
            let req = stablecoin_escrow::ResolveRequest {
                resolution: resolution.clone(),
                resolution_note: note.clone(),
            };
            let out = admin
                .resolve(&actor, id.trim(), &req)
                .await
                .map_err(escrow_err)?;
            let action = if out.awaiting_approval {
                "escrow.resolve.proposed"
            } else {
                "escrow.resolve"
            };
            engine
                .record_staff_action(
                    &account.id,
                    action,
                    &out.escrow.id,
                    Some(&format!("{}: {}", resolution.trim(), note.trim())),
                )
                .await?;
            serde_json::to_value(out).map_err(|e| CoreError::Storage(e.to_string()))
        }
        EscrowCommand::Recover {
            id,
            kind,
            token,
            note,
            staff,
        } => {
            let (account, actor) = active_staff(engine, staff).await?;
            let req = stablecoin_escrow::RecoveryRequest {
                kind: kind.clone(),
                token: token.clone(),
                note: note.clone(),
            };
            let payout = admin
                .authorize_recovery(&actor, id.trim(), &req)
                .await
                .map_err(escrow_err)?;
            engine
                .record_staff_action(
                    &account.id,
                    "escrow.recovery",
                    &payout.escrow_id,
                    Some(&format!(
                        "{} {} {}: {}",
                        payout.recovery_kind.as_deref().unwrap_or_default(),
                        payout.token,
                        payout.id,
                        note.trim()
                    )),
                )
                .await?;
            serde_json::to_value(payout).map_err(|e| CoreError::Storage(e.to_string()))
        }
        EscrowCommand::History { id, limit, page } => {
            let cli = stablecoin_escrow::StaffActor::new(stablecoin_core::engine::STAFF_ACTOR_CLI)
                .map_err(escrow_err)?;
            let deal = admin
                .get_staff_view(&cli, id.trim())
                .await
                .map_err(escrow_err)?;
            let events = admin
                .events(&cli, id.trim(), Some(*limit), Some(*page))
                .await
                .map_err(escrow_err)?;
            Ok(serde_json::json!({"escrow": deal, "history": events}))
        }
    }
}

/// The named staff account (id or name) when it is active, and its escrow actor.
async fn active_staff(
    engine: &Engine,
    staff: &str,
) -> Result<
    (
        stablecoin_core::engine::StaffAccount,
        stablecoin_escrow::StaffActor,
    ),
    CoreError,
> {
    let account = engine.find_staff(staff).await?;
    if !account.is_active() {
        return Err(CoreError::InvalidParameter {
            field: "staff",
            reason: "this staff account is disabled".into(),
        });
    }
    let actor = stablecoin_escrow::StaffActor::new(&account.id).map_err(escrow_err)?;
    Ok((account, actor))
}
