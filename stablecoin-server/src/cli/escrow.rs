//! `escrow ...`: the escrow staff work of the staff console and `/admin/v1/escrows`,
//! from the command line, against the configured storage. Every mutation acts as the
//! staff account whose secret it was given (`STABLECOIN_STAFF_SECRET` or standard
//! input, never an argument or a name), under the same two-person rule as over HTTP, and
//! is audited under its id in the decision's own commit.

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
    /// Resolve a DISPUTED deal as the staff account whose secret is in
    /// STABLECOIN_STAFF_SECRET (or on standard input); audited under its id.
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
    },
    /// Return a whole recoverable balance of one kind to the buyer's linked wallet as
    /// the staff account whose secret is in STABLECOIN_STAFF_SECRET (or on standard
    /// input); audited under its id.
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
        // The two-person rule's refusals keep their stable codes.
        E::SecondApproverRequired { proposed_by } => {
            CoreError::SecondApproverRequired { proposed_by }
        }
        E::ApprovalMismatch { field } => CoreError::ApprovalMismatch { field },
        other => CoreError::InvalidParameter {
            field: "escrow",
            reason: format!("{other} ({})", other.code()),
        },
    }
}

/// Runs an `escrow ...` command. A resolution or recovery acts as the staff account
/// whose secret is `staff_secret` (proven against the store, active), exactly as one
/// made over HTTP with that secret.
pub async fn run_escrow_admin(
    engine: &Engine,
    escrow: Option<&stablecoin_escrow::EscrowEngine>,
    cmd: &EscrowCommand,
    staff_secret: Option<&str>,
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
        } => {
            let actor = staff_actor(engine, staff_secret).await?;
            let req = stablecoin_escrow::ResolveRequest {
                resolution: resolution.clone(),
                resolution_note: note.clone(),
            };
            let out = admin
                .resolve(&actor, id.trim(), &req)
                .await
                .map_err(escrow_err)?;
            serde_json::to_value(out).map_err(|e| CoreError::Storage(e.to_string()))
        }
        EscrowCommand::Recover {
            id,
            kind,
            token,
            note,
        } => {
            let actor = staff_actor(engine, staff_secret).await?;
            let req = stablecoin_escrow::RecoveryRequest {
                kind: kind.clone(),
                token: token.clone(),
                note: note.clone(),
            };
            let out = admin
                .authorize_recovery(&actor, id.trim(), &req)
                .await
                .map_err(escrow_err)?;
            match out {
                stablecoin_escrow::RecoveryOutcome::Claimed(payout) => serde_json::to_value(payout),
                stablecoin_escrow::RecoveryOutcome::Proposed(deal) => {
                    Ok(serde_json::json!({"awaiting_approval": true, "escrow": deal}))
                }
            }
            .map_err(|e| CoreError::Storage(e.to_string()))
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

/// The escrow actor of the staff account proven by `secret` ([`super::prove_staff`]).
async fn staff_actor(
    engine: &Engine,
    secret: Option<&str>,
) -> Result<stablecoin_escrow::StaffActor, CoreError> {
    let staff = super::prove_staff(engine, secret).await?;
    stablecoin_escrow::StaffActor::from_identity(&staff).map_err(escrow_err)
}
