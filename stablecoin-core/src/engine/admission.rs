//! What a rail admits: the tokens it carries, and whether it takes sponsored sends now.
//!
//! Both are product rules (spec 1.1, 1.4, 1.5, 7), so they live here and not in a host:
//! every use case that moves a token on a rail ([`Engine::fund`], [`Engine::send`],
//! [`Engine::send_on`], [`Engine::withdraw`]) checks them itself, and an embedder calling
//! the engine gets the same UNKNOWN_TOKEN and RAIL_NOT_READY as the server's users.
//!
//! The token check runs first, with the other checks of a request that read nothing
//! (`check_fund`, `check_send`: one definition for live and for the sandbox, so a
//! simulation refuses exactly what live refuses). The readiness gate runs inside the use
//! case's idempotent decision, after a recorded result would have been replayed: a
//! request that was accepted is answered as it was, even once the rail stopped being
//! READY.

use super::{Engine, FundRequest, SendRequest};
use crate::domain::fx::{QuoteRef, parse_quote_ref};
use crate::domain::money::Token;
use crate::error::{CoreError, CoreResult};
use crate::ports::rail::{Rail, RailId, Readiness};
use std::collections::BTreeMap;
use std::sync::Arc;

/// UNKNOWN_TOKEN unless `rail` carries `token` ([`Rail::tokens`]).
pub(crate) fn check_token(rail: &dyn Rail, token: Token) -> CoreResult<()> {
    let carried = rail.tokens();
    if carried.contains(&token) {
        return Ok(());
    }
    let names: Vec<&str> = carried.iter().map(|t| t.as_str()).collect();
    Err(CoreError::TokenNotCarried {
        rail: rail.id().name(),
        token: token.to_string(),
        carried: if names.is_empty() {
            "no token".into()
        } else {
            names.join(" and ")
        },
    })
}

impl Engine {
    /// Readiness of every configured rail, by rail name, asked now (what `/health/ready`
    /// reports; the send gate's cache is not used here).
    pub async fn readiness(&self) -> BTreeMap<String, Readiness> {
        let mut out = BTreeMap::new();
        for (id, rail) in self.kernel.rail_map().iter() {
            out.insert(id.name(), rail.readiness().await);
        }
        out
    }

    /// UNKNOWN_TOKEN (`"tron supports only USDT"`) unless `rail` carries `token`;
    /// RAIL_NOT_READY when the rail is not configured. Reads nothing.
    pub fn require_token(&self, rail: RailId, token: Token) -> CoreResult<()> {
        check_token(&**self.rail(rail)?, token)
    }

    /// RAIL_NOT_READY unless `rail` may take a sponsored send now: only a rail that
    /// reports READY does (INBOUND_READY receives and reads, but does not send). The
    /// error's reason is the status and the rail's reasons. A rail whose readiness is not
    /// cheap ([`Rail::readiness_is_cheap`]) is asked at most once per
    /// `EngineConfig::readiness_cache_ms`.
    pub async fn require_ready(&self, rail: RailId) -> CoreResult<()> {
        let r = self.rail(rail)?;
        let readiness = self.send_readiness(r).await;
        if readiness.can_send() {
            return Ok(());
        }
        Err(CoreError::RailNotReady {
            rail: rail.name(),
            reason: crate::domain::redact::urls(&readiness.describe()),
        })
    }

    /// Readiness of every configured rail, by rail name, for public reports (health,
    /// metrics): a rail whose check is costly is asked at most once per
    /// `EngineConfig::readiness_cache_ms` (so unauthenticated probes cannot make the
    /// service hammer its nodes), and URLs in the reasons are redacted.
    pub async fn readiness_report(&self) -> BTreeMap<String, Readiness> {
        let mut out = BTreeMap::new();
        for (id, rail) in self.kernel.rail_map().iter() {
            let mut r = self.send_readiness(rail).await;
            for reason in &mut r.reasons {
                *reason = crate::domain::redact::urls(reason);
            }
            out.insert(id.name(), r);
        }
        out
    }

    async fn send_readiness(&self, rail: &Arc<dyn Rail>) -> Readiness {
        if rail.readiness_is_cheap() {
            return rail.readiness().await;
        }
        let id = rail.id();
        if let Some(r) = self.readiness_cache.get(&id, self.now().millis()) {
            return r;
        }
        let r = rail.readiness().await;
        self.readiness_cache.put(id, r.clone(), self.now().millis());
        r
    }

    /// The checks of a funding that read nothing (shared with the sandbox): a positive
    /// amount, of a token the EVM rail carries. Returns that rail.
    pub(crate) fn check_fund(
        &self,
        req: &FundRequest,
        network: Option<RailId>,
    ) -> CoreResult<&Arc<dyn Rail>> {
        if req.amount.is_zero() {
            return Err(CoreError::InvalidAmount {
                input: "0".into(),
                reason: "amount must be greater than zero".into(),
            });
        }
        let rail = self.evm_rail_for(network)?;
        check_token(&**rail, req.token)?;
        Ok(rail)
    }

    /// The checks of a send on `rail` that read nothing (shared with the sandbox): a token
    /// the rail carries, a well-formed `quote_id`, and a `DIRECT_CRYPTO` quote of the
    /// requested token, at least the rail's floor (`EngineConfig::min_send`). Returns the
    /// parsed quote reference.
    pub(crate) fn check_send(&self, rail: &dyn Rail, req: &SendRequest) -> CoreResult<QuoteRef> {
        check_token(rail, req.token)?;
        let quote = check_quote(req)?;
        if let QuoteRef::DirectCrypto { amount, .. } = &quote {
            // An FX quote's amount is known once the quote is read (`send_attempt`).
            self.config.min_send.check(rail.id(), *amount)?;
        }
        Ok(quote)
    }
}

/// A send's `quote_id`, parsed, and QUOTE_TOKEN_MISMATCH for a `DIRECT_CRYPTO` quote of
/// another token than the requested one. Reads nothing.
pub(crate) fn check_quote(req: &SendRequest) -> CoreResult<QuoteRef> {
    let quote_ref = parse_quote_ref(&req.quote_id)?;
    if let QuoteRef::DirectCrypto { token, .. } = &quote_ref {
        direct_token_matches(*token, req.token)?;
    }
    Ok(quote_ref)
}

/// QUOTE_TOKEN_MISMATCH unless a `DIRECT_CRYPTO` quote names the requested token.
pub(crate) fn direct_token_matches(quote_token: Token, token: Token) -> CoreResult<()> {
    if quote_token == token {
        return Ok(());
    }
    Err(CoreError::QuoteTokenMismatch {
        quote_token: quote_token.to_string(),
        token: token.to_string(),
    })
}
