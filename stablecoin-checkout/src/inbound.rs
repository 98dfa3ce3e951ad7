//! Checkout's share of the inbound transfers: the kernel's router
//! ([`stablecoin_core::kernel::inbound`]) hands checkout every transfer to an address a
//! payment session reserved, on every network that monitors deposits. Each is recorded
//! through [`CheckoutEngine::record_deposit`], the path the deposit intake route takes
//! too: detected below the confirmation depth, credited at it.

use crate::engine::{CheckoutEngine, DepositFact, DepositOutcome, DepositStage};
use crate::model::{Mode, Session, integer_id};
use crate::worker::CheckoutTickReport;
use async_trait::async_trait;
use stablecoin_core::kernel::ProductError;
use stablecoin_core::kernel::inbound::{
    InboundError, InboundHandler, InboundOutcome, InboundRouter,
};
use stablecoin_core::kernel::quarantine::QuarantineOwner;
use stablecoin_core::kernel::stray::{SandboxOwner, record_stray};
use stablecoin_core::ports::{Inbound, RailId, Record, StoredRecord};
use std::sync::Arc;

/// Checkout's name in the inbound router (its position's key in each rail's cursor
/// record). Persisted: never renamed.
pub const CHECKOUT_PRODUCT: &str = "checkout";

impl CheckoutEngine {
    /// A router of the rails checkout takes payments on, feeding checkout alone: what
    /// [`CheckoutEngine::tick`] pumps when checkout runs on its own.
    pub fn inbound_router(&self) -> InboundRouter {
        self.kernel
            .inbound_router(self.config.batch_limit)
            .with_handler(Arc::new(self.clone()))
    }

    /// One pump of [`CheckoutEngine::inbound_router`], as a tick's report.
    pub(crate) async fn scan_standalone(&self) -> CheckoutTickReport {
        let r = self.inbound_router().pump().await;
        let mine = r.of(CHECKOUT_PRODUCT);
        CheckoutTickReport {
            deposits: mine.credited + mine.detected,
            errors: r.errors,
            ..Default::default()
        }
    }
}

/// Checkout as a product of the shared runtime: payment sessions own their addresses.
/// Test-mode sessions are paid only by simulated deposits, never by a chain: a real
/// transfer to one is recorded as a stray deposit (`stablecoin_core::kernel::stray`).
#[async_trait]
impl InboundHandler for CheckoutEngine {
    fn product(&self) -> &'static str {
        CHECKOUT_PRODUCT
    }

    fn owns(&self, kind: &str) -> bool {
        kind == Session::KIND
    }

    /// A failure worth a retry (the store, a rail, a lost race) holds checkout's position
    /// so the transfer is offered again; any other (an amount no ledger can hold) is
    /// reported and passed, so one bad transfer cannot stop checkout's deposits.
    async fn on_inbound(
        &self,
        rail: RailId,
        owner: &StoredRecord,
        inbound: &Inbound,
    ) -> Result<InboundOutcome, InboundError> {
        let session = Session::from_stored(owner).map_err(|e| {
            InboundError::Retry(format!(
                "session {}: {}",
                owner.id,
                stablecoin_core::CoreError::from(e)
            ))
        })?;
        if session.mode != Mode::Live {
            // Real money at a test session's address: owed back, never credited.
            return self.record_stray(rail, &session, inbound).await;
        }
        let network = rail.name();
        let index = inbound.index.to_string();
        let fact = DepositFact {
            deposit_id: integer_id(&[&network, &inbound.tx_hash, &index]),
            network: network.clone(),
            address: inbound.to.0.clone(),
            token: inbound.token,
            amount: inbound.amount,
            tx_hash: Some(inbound.tx_hash.clone()),
            confirmations: inbound.confirmations,
            detected_by: format!("checkout-scanner-{network}"),
        };
        let (stage, outcome) = if inbound.confirmed {
            let stage = DepositStage::Confirmed {
                safe_to_credit: true,
            };
            (stage, InboundOutcome::Credited { completes: false })
        } else {
            (DepositStage::Detected, InboundOutcome::Detected)
        };
        match self.record_deposit(&fact, stage, Mode::Live).await {
            Ok(DepositOutcome::AlreadyRecorded) | Ok(DepositOutcome::UnknownAddress) => {
                Ok(InboundOutcome::Ignored)
            }
            Ok(DepositOutcome::Credited) => {
                // The rail named the sender: an opted-in business refunds the excess or
                // late part to it (`engine::auto_refunds`). The credit is committed; a
                // failure here is reported and the business refunds by hand.
                match self
                    .auto_refund_deposit(fact.deposit_id, &inbound.from.0)
                    .await
                {
                    Ok(_) => Ok(outcome),
                    Err(e) => Err(InboundError::Skip(format!("automatic refund: {e}"))),
                }
            }
            Ok(_) => Ok(outcome),
            Err(e) if e.is_retryable() => Err(InboundError::Retry(e.to_string())),
            Err(e) => Err(InboundError::Skip(e.to_string())),
        }
    }

    /// A live session quarantines (its key signs a return; its business's tenant is
    /// told); a test session does not (a real deposit there is a stray, owed back).
    async fn quarantine_owner(
        &self,
        _rail: RailId,
        owner: &StoredRecord,
        _inbound: &Inbound,
    ) -> Result<Option<QuarantineOwner>, InboundError> {
        let session = Session::from_stored(owner).map_err(|e| {
            InboundError::Retry(format!(
                "session {}: {}",
                owner.id,
                stablecoin_core::CoreError::from(e)
            ))
        })?;
        if session.mode != Mode::Live {
            return Ok(None);
        }
        Ok(Some(QuarantineOwner {
            tenants: vec![session.tenant.0.clone()],
            purpose: Mode::Live.key_purpose(&session.id),
            origin: "checkout_session",
            origin_id: session.id,
        }))
    }
}

/// What shows a test session's address, in a stray deposit.
pub const STRAY_ORIGIN: &str = "checkout_test_session";

impl CheckoutEngine {
    /// Records a confirmed real transfer into a test session's address as a stray
    /// deposit (once per transfer; the record's id is the transfer's). Below the
    /// confirmation depth nothing is recorded: the rail offers the transfer again.
    async fn record_stray(
        &self,
        rail: RailId,
        session: &Session,
        inbound: &Inbound,
    ) -> Result<InboundOutcome, InboundError> {
        if !inbound.confirmed {
            return Ok(InboundOutcome::Ignored);
        }
        // Sessions made before the sandbox branch derived their test addresses from the
        // live path: the key that signs a return is the one whose address it is.
        let purpose = {
            let test = session.mode.key_purpose(&session.id);
            let r = self
                .kernel
                .rail(rail)
                .map_err(|e| InboundError::Retry(e.to_string()))?;
            let address = r
                .address_for(&test)
                .await
                .map_err(|e| InboundError::Retry(e.to_string()))?;
            if stablecoin_core::kernel::inbound::canonical_address(&rail.name(), &address.0)
                == stablecoin_core::kernel::inbound::canonical_address(&rail.name(), &inbound.to.0)
            {
                test
            } else {
                Mode::Live.key_purpose(&session.id)
            }
        };
        let owner = SandboxOwner {
            tenant: session.tenant.0.clone(),
            purpose,
            origin: STRAY_ORIGIN,
            origin_id: session.id.clone(),
        };
        record_stray(&self.kernel, rail, &owner, inbound).await
    }
}
