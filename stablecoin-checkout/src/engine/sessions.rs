//! Sessions: create (with idempotency), read, list, cancel, and the closing of a
//! session that ends unpaid (shared by cancel and expiry).

use super::{CheckoutEngine, MAX_RETRIES, Scope};
use crate::error::{CheckoutError, CheckoutResult, checked_sum, rail_err, store_err};
use crate::events;
use crate::model::{Mode, PayOption, Session, accounts, integer_id};
use crate::state::{SessionEvent, SessionStatus, transition};
use crate::views::{CreateSessionRequest, ListItem, SessionList, SessionView};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::kernel::AuthContext;
use stablecoin_core::kernel::idempotency::KeyedRequest;
use stablecoin_core::ports::{
    Batch, LedgerTransfer, ListQuery, Phase as LedgerPhase, Record, Versioned,
};
use std::collections::BTreeMap;

/// Largest page of the list.
pub const MAX_LIMIT: u32 = 100;
/// Page size when `limit` is absent.
pub const DEFAULT_LIMIT: u32 = 20;
/// Highest page number accepted (bounds the offset).
pub const MAX_PAGE: u32 = 1_000_000;

fn bad(field: &'static str, reason: &str) -> CheckoutError {
    CheckoutError::InvalidParameter {
        field,
        reason: reason.into(),
    }
}

pub(super) fn text(field: &'static str, v: &Option<String>, max: usize) -> CheckoutResult<String> {
    let s = v.as_deref().unwrap_or("").trim();
    if s.chars().count() > max {
        return Err(bad(field, &format!("at most {max} characters")));
    }
    if s.chars().any(char::is_control) {
        return Err(bad(field, "control characters are not allowed"));
    }
    Ok(s.to_string())
}

fn check_metadata(
    m: &Option<serde_json::Map<String, serde_json::Value>>,
) -> CheckoutResult<serde_json::Map<String, serde_json::Value>> {
    let Some(m) = m else {
        return Ok(Default::default());
    };
    if m.len() > 20 {
        return Err(bad("metadata", "at most 20 keys"));
    }
    for (k, v) in m {
        if k.is_empty() || k.chars().count() > 40 {
            return Err(bad("metadata", "keys are 1 to 40 characters"));
        }
        match v.as_str() {
            Some(s) if s.chars().count() <= 500 => {}
            _ => {
                return Err(bad(
                    "metadata",
                    "values are strings of at most 500 characters",
                ));
            }
        }
    }
    Ok(m.clone())
}

impl CheckoutEngine {
    /// `POST /api/v1/checkout/sessions`: a new pending session with a fresh deposit
    /// address on each accepted network. The same `Idempotency-Key` with the same
    /// request answers the first session; with another request, `IDEMPOTENCY_KEY_REUSED`.
    pub async fn create_session(
        &self,
        auth: &AuthContext,
        req: &CreateSessionRequest,
        idempotency_key: Option<&str>,
    ) -> CheckoutResult<SessionView> {
        let scope = Self::scope(auth)?;
        // A business's keys are its own: filed per business and mode.
        let namespace = format!("checkout:{}:{}:", scope.business, scope.mode.as_str());
        let at = KeyedRequest {
            tenant: &scope.tenant.0,
            key: idempotency_key,
            namespace: &namespace,
            operation: "checkout.create",
        };
        self.kernel
            .idempotent(at, req, || async {
                let (session, view) = self.new_session(&scope, req).await?;
                let batch = Batch {
                    puts: vec![session.insert()?],
                    ..Default::default()
                };
                Ok::<_, CheckoutError>((batch, view))
            })
            .await
    }

    pub(crate) async fn new_session(
        &self,
        scope: &Scope,
        req: &CreateSessionRequest,
    ) -> CheckoutResult<(Session, SessionView)> {
        let amount = Micros::parse_positive(req.amount.trim()).map_err(|e| {
            CheckoutError::InvalidAmount {
                reason: e.to_string(),
            }
        })?;
        if amount > self.config.max_amount {
            return Err(CheckoutError::InvalidAmount {
                reason: format!("at most {}", self.config.max_amount.to_decimal_string()),
            });
        }
        let currency = req.currency.trim().to_string();
        let allowed: Vec<Token> = match currency.as_str() {
            "USD" => Token::ALL.to_vec(),
            c => vec![
                c.parse::<Token>()
                    .map_err(|_| CheckoutError::UnknownToken {
                        token: c.chars().take(16).collect(),
                    })?,
            ],
        };
        let tokens: Vec<Token> = match &req.tokens {
            None => allowed.clone(),
            Some(list) if list.is_empty() || list.len() > 2 => {
                return Err(bad("tokens", "one or two tokens"));
            }
            Some(list) => {
                let mut out = Vec::new();
                for t in list {
                    let t: Token = t.parse().map_err(|_| CheckoutError::UnknownToken {
                        token: t.chars().take(16).collect(),
                    })?;
                    if !allowed.contains(&t) {
                        return Err(bad("tokens", "a token the currency does not allow"));
                    }
                    if !out.contains(&t) {
                        out.push(t);
                    }
                }
                out
            }
        };
        let expires_in = req
            .expires_in_secs
            .unwrap_or(self.config.default_expiry_secs);
        if expires_in < self.config.min_expiry_secs || expires_in > self.config.max_expiry_secs {
            return Err(bad(
                "expires_in_secs",
                &format!(
                    "between {} and {}",
                    self.config.min_expiry_secs, self.config.max_expiry_secs
                ),
            ));
        }
        let reference = text("reference", &req.reference, 128)?;
        let description = text("description", &req.description, 500)?;
        let customer_name = text("customer_name", &req.customer_name, 200)?;
        let customer_email = text("customer_email", &req.customer_email, 254)?;
        if !customer_email.is_empty() {
            let ok = customer_email.split_once('@').is_some_and(|(l, d)| {
                !l.is_empty() && d.contains('.') && !d.starts_with('.') && !d.ends_with('.')
            }) && !customer_email.contains(char::is_whitespace);
            if !ok {
                return Err(bad("customer_email", "not an e-mail address"));
            }
        }
        let customer_id =
            Some(text("customer_id", &req.customer_id, 128)?).filter(|s| !s.is_empty());
        let metadata = check_metadata(&req.metadata)?;

        // Networks: the configured rails that watch deposits and carry an accepted token.
        let wanted: Option<Vec<String>> = match &req.networks {
            Some(l) if l.is_empty() => return Err(bad("networks", "at least one network")),
            Some(l) if l.len() > 8 => return Err(bad("networks", "at most 8 networks")),
            other => other.clone(),
        };
        let id = self.new_id("cs");
        let mut options = Vec::new();
        let mut found = Vec::new();
        let mut on_solana = false;
        for rail in self.kernel.rails() {
            let network = rail.id().name();
            if let Some(w) = &wanted
                && !w.contains(&network)
            {
                continue;
            }
            let carried: Vec<Token> = rail
                .tokens()
                .into_iter()
                .filter(|t| tokens.contains(t))
                .collect();
            if carried.is_empty() || !rail.monitors_inbound() {
                continue;
            }
            found.push(network.clone());
            on_solana |= rail.id() == stablecoin_core::ports::RailId::Solana;
            let address = rail
                .address_for(&scope.mode.key_purpose(&id))
                .await
                .map_err(rail_err)?;
            for t in carried {
                options.push(PayOption {
                    network: network.clone(),
                    token: t,
                    address: address.0.clone(),
                });
            }
        }
        if let Some(w) = &wanted
            && let Some(missing) = w.iter().find(|n| !found.contains(n))
        {
            return Err(CheckoutError::UnsupportedNetwork {
                network: missing.chars().take(32).collect(),
            });
        }
        if options.is_empty() {
            return Err(CheckoutError::UnsupportedNetwork {
                network: "none of the configured networks carries the session's tokens".into(),
            });
        }
        let now = self.now();
        let expires_at = now.plus_secs(expires_in as i64);
        let session = Session {
            number: integer_id(&[&id]) as i64,
            id: id.clone(),
            tenant: scope.tenant.clone(),
            business: scope.business.clone(),
            mode: scope.mode,
            amount,
            currency,
            options,
            reference,
            description,
            customer_name,
            customer_email,
            customer_id,
            metadata,
            status: SessionStatus::Pending,
            failure_reason: None,
            expires_at,
            created_at: now,
            updated_at: now,
            paid_at: None,
            paid_network: None,
            paid_tx_hash: None,
            applied: BTreeMap::new(),
            received: Micros::ZERO,
            pending: Micros::ZERO,
            excess: Micros::ZERO,
            late: Micros::ZERO,
            refundable: Micros::ZERO,
            deposit_count: 0,
            refunded: BTreeMap::new(),
            due_at: Some(expires_at),
            payment_link: None,
            solana_reference: on_solana.then(|| crate::wallet_links::solana_reference(&id)),
        };
        let view = SessionView::of(&session, &[]);
        Ok((session, view))
    }

    /// `GET /api/v1/checkout/sessions/{id}`.
    pub async fn get_session(&self, auth: &AuthContext, id: &str) -> CheckoutResult<SessionView> {
        let scope = Self::scope(auth)?;
        let v = self.load_scoped(&scope, id).await?;
        let deposits = self.deposits_of(&v.record).await?;
        Ok(SessionView::of(&v.record, &deposits))
    }

    /// `GET /api/v1/checkout/list`: the business's sessions of the key's mode, newest
    /// first; `status` one of pending, paid, expired, failed; `limit` 1-100 (default
    /// 20); `page` from 1 (default 1; a page past the end is empty, with the total).
    pub async fn list_sessions(
        &self,
        auth: &AuthContext,
        status: Option<&str>,
        limit: Option<u32>,
        page: Option<u32>,
    ) -> CheckoutResult<SessionList> {
        let scope = Self::scope(auth)?;
        let limit = limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(bad("limit", "between 1 and 100"));
        }
        let page = page.unwrap_or(1);
        if !(1..=MAX_PAGE).contains(&page) {
            return Err(bad("page", "between 1 and 1000000"));
        }
        let status = match status {
            None => None,
            Some(s) => Some(
                SessionStatus::parse(s)
                    .ok_or_else(|| bad("status", "one of pending, paid, expired, failed"))?,
            ),
        };
        let (rows, total) = self
            .kernel
            .ports()
            .store
            .list(&ListQuery {
                kind: Session::KIND.into(),
                tenant: scope.tenant.0.clone(),
                subkind: Some(Session::scope(&scope.business, scope.mode)),
                status: status.map(|s| s.as_str().to_string()),
                limit: limit as usize,
                offset: (page as usize - 1) * limit as usize,
            })
            .await
            .map_err(store_err)?;
        let payments = rows
            .iter()
            .map(|r| Session::from_stored(r).map(|s| ListItem::of(&s)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SessionList {
            limit,
            page,
            total,
            payments,
        })
    }

    /// `POST /api/v1/checkout/sessions/{id}/cancel`: a pending session fails with
    /// reason `cancelled`; what it had received becomes refundable. `INVALID_STATE` once
    /// it is paid, expired or failed.
    pub async fn cancel_session(
        &self,
        auth: &AuthContext,
        id: &str,
    ) -> CheckoutResult<SessionView> {
        let scope = Self::scope(auth)?;
        for _ in 0..MAX_RETRIES {
            let v = self.load_scoped(&scope, id).await?;
            let now = self.now();
            let mut batch = Batch::default();
            let session = self.close_unpaid(v, SessionEvent::Cancel, now, &mut batch)?;
            match self.commit(batch).await {
                Ok(()) => {
                    let deposits = self.deposits_of(&session).await?;
                    return Ok(SessionView::of(&session, &deposits));
                }
                Err(CheckoutError::Conflict { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(CheckoutError::Conflict {
            what: format!("session {id}"),
        })
    }

    /// Ends a pending session unpaid (`Cancel`, `ExpireEmpty`, `ExpireUnderpaid`) into
    /// `batch`: the status, the reason, the held money moved to refundable, and
    /// `payment.failed` for a failure (a plain expiry reports nothing: nothing was paid).
    pub(crate) fn close_unpaid(
        &self,
        v: Versioned<Session>,
        event: SessionEvent,
        now: Timestamp,
        batch: &mut Batch,
    ) -> CheckoutResult<Session> {
        let Versioned {
            record: mut s,
            version,
        } = v;
        s.status = transition(s.status, event).map_err(|e| CheckoutError::InvalidState {
            status: e.from.as_str().into(),
        })?;
        let applied = s.applied_total();
        s.failure_reason = match event {
            SessionEvent::Cancel => Some("cancelled".into()),
            SessionEvent::ExpireUnderpaid => Some(format!(
                "underpaid: {} of {} received",
                applied.to_decimal_string(),
                s.amount.to_decimal_string()
            )),
            _ => None,
        };
        if s.mode == Mode::Live {
            for (token, held) in &s.applied {
                if held.is_zero() {
                    continue;
                }
                let from = accounts::held(&s.id, *token);
                let to = accounts::refundable(&s.tenant, &s.business, *token);
                batch.ledger.push(LedgerTransfer {
                    id: format!("checkout:{}:unpaid:{token}", s.id),
                    debit: from.id.clone(),
                    credit: to.id.clone(),
                    amount: *held,
                    phase: LedgerPhase::Single,
                });
                batch.accounts.push(from);
                batch.accounts.push(to);
            }
        }
        s.refundable = checked_sum(s.refundable, applied, "the refundable amount")?;
        s.updated_at = now;
        s.due_at = None;
        if s.status == SessionStatus::Failed {
            batch
                .outbox
                .push(events::payment_event(self.new_id("evt"), &s, now));
        }
        batch.puts.push(s.update(version)?);
        Ok(s)
    }
}
