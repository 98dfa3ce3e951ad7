//! The invariants, checked after every step and after the drain.

use super::world::World;
use stablecoin::core::domain::money::Token;
use stablecoin::core::domain::state::{OpKind, OpStatus};
use stablecoin::core::engine::accounts;
use stablecoin::core::ports::{Rail, RailId, Store};
use std::collections::BTreeMap;

/// Every rail of the world and the tokens it carries.
fn rails(w: &World) -> [(RailId, Vec<Token>); 2] {
    [
        (super::world::EVM.rail_id(), w.evm.tokens()),
        (RailId::Tron, w.tron.tokens()),
    ]
}

pub async fn after_step(w: &World, step: usize) {
    let seed = w.seed;
    assert_eq!(
        w.ledger.posted_sum().await.unwrap(),
        0,
        "seed {seed} step {step}: double entry"
    );
    // The ledger and the chains agree, operations in flight allowed for: nothing paid
    // twice, nothing credited twice, nothing lost. (An outside deposit shows as an
    // excess until the scanner credits it: the drain requires a clean pass.)
    let r = w.engine.reconcile_chains().await;
    assert!(
        !r.has_shortfall() && r.errors.is_empty(),
        "seed {seed} step {step}: ledger and chain drift: {r:#?}"
    );
    no_negative_balance(w, step).await;
    events_match_committed_state(w, step).await;
}

async fn no_negative_balance(w: &World, step: usize) {
    let mut accounts_seen = Vec::new();
    for t in &w.tenants {
        for token in Token::ALL {
            accounts_seen.push(accounts::treasury(t, token).id);
        }
    }
    for p in &w.phones {
        let Some((id, _)) = w.wallet_addresses(p).await else {
            continue;
        };
        for (rail, tokens) in rails(w) {
            for token in tokens {
                accounts_seen.push(w.engine.wallet_account(&id, rail, token).id);
            }
        }
    }
    for token in Token::ALL {
        accounts_seen.push(accounts::service_fees(token).id);
    }
    for a in accounts_seen {
        if let Ok(b) = w.ledger.balance(&a).await {
            assert!(
                b.available() >= 0,
                "seed {} step {step}: {a} is negative: {b:?}",
                w.seed
            );
        }
    }
}

/// The operation id and outcome of a settled or failed event.
fn terminal_event(event_type: &str, payload: &serde_json::Value) -> Option<(String, bool)> {
    let settled = match event_type {
        "transfer.settled" | "swap.settled" => true,
        "transfer.failed" | "swap.failed" => false,
        _ => return None,
    };
    let body = payload
        .as_object()
        .and_then(|o| o.values().find(|v| v.is_object()))
        .unwrap_or(payload);
    let id = body
        .get("transfer_id")
        .or_else(|| body.get("swap_id"))
        .and_then(|v| v.as_str())?;
    Some((id.to_string(), settled))
}

/// Every settled or failed event in the outbox is its operation's committed state, and
/// no operation is announced twice. Reads only the events added since the last check
/// (a terminal operation never changes again, so one look at each is enough); returns
/// every operation announced so far, as "tenant/id" -> settled.
async fn events_match_committed_state(w: &World, step: usize) -> BTreeMap<String, bool> {
    let mut seen = w.announced.lock().unwrap().clone();
    let (mut cursor, mut announced) = seen;
    for (seq, e) in w.store.outbox_after(cursor, usize::MAX).await.unwrap() {
        cursor = cursor.max(seq);
        let Some((id, settled)) = terminal_event(&e.event_type, &e.payload) else {
            continue;
        };
        assert!(
            announced
                .insert(format!("{}/{id}", e.tenant), settled)
                .is_none(),
            "seed {} step {step}: {id} announced twice to {}",
            w.seed,
            e.tenant
        );
        let rec = w
            .store
            .get("operation", &id)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("seed {} step {step}: event for unrecorded {id}", w.seed));
        let status = rec.status.as_deref().and_then(OpStatus::parse);
        let ok = match settled {
            true => matches!(status, Some(OpStatus::Settled | OpStatus::Completed)),
            false => matches!(status, Some(OpStatus::Failed | OpStatus::Refunded)),
        };
        assert!(
            ok,
            "seed {} step {step}: {} for {id}, which is {status:?}",
            w.seed, e.event_type
        );
    }
    seen = (cursor, announced.clone());
    *w.announced.lock().unwrap() = seen;
    announced
}

pub async fn after_drain(w: &World) {
    let seed = w.seed;
    assert_eq!(
        w.open_operations().await,
        0,
        "seed {seed}: operations left open after the drain"
    );
    after_step(w, usize::MAX).await;
    let r = w.engine.reconcile_chains().await;
    assert!(r.is_clean(), "seed {seed}: drift after the drain: {r:#?}");
    // No hold is left: every wallet's chain balance IS its ledger balance.
    for p in &w.phones {
        let Some((id, addresses)) = w.wallet_addresses(p).await else {
            continue;
        };
        for (rail, tokens) in rails(w) {
            let Some(address) = addresses.get(&rail.name()) else {
                continue;
            };
            let chain = if rail == RailId::Tron {
                &w.tron
            } else {
                &w.evm
            };
            for token in tokens {
                let account = w.engine.wallet_account(&id, rail, token).id;
                let b = w.ledger.balance(&account).await.unwrap_or_default();
                let on_chain = chain.balance(address, token).await.unwrap().get();
                assert_eq!(
                    (b.debits_pending, b.credits_pending),
                    (0, 0),
                    "seed {seed}: hold left on {account}"
                );
                assert_eq!(
                    b.posted(),
                    on_chain as i128,
                    "seed {seed}: {account} != chain"
                );
            }
        }
    }
    for t in &w.tenants {
        for token in Token::ALL {
            let b = w
                .ledger
                .balance(&accounts::treasury(t, token).id)
                .await
                .unwrap_or_default();
            assert_eq!(
                b.debits_pending, 0,
                "seed {seed}: treasury hold left for {t}"
            );
        }
    }
    // Every terminal transfer and swap was announced to its tenant, with its outcome.
    let announced = events_match_committed_state(w, usize::MAX).await;
    for (t, op) in w.operations().await {
        if !matches!(op.kind, OpKind::Transfer | OpKind::Swap) {
            continue;
        }
        let settled = matches!(op.status, OpStatus::Settled | OpStatus::Completed);
        assert_eq!(
            announced.get(&format!("{t}/{}", op.id)),
            Some(&settled),
            "seed {seed}: {} {} was not announced as {}",
            op.kind.as_str(),
            op.id,
            op.status.as_str()
        );
    }
}
