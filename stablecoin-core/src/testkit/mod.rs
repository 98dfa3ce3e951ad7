//! Conformance suites every adapter runs (BDK `persist_test_utils` style).
//!
//! [`store_suite`] runs every `case_*` function on a fresh store from `make` and checks
//! after each that the ledger still sums to zero (double entry). Each case is public, so
//! an adapter can also run one alone while debugging:
//!
//! ```ignore
//! #[tokio::test(flavor = "multi_thread")]
//! async fn my_store_conforms() {
//!     stablecoin_core::testkit::store_suite(|| async { Arc::new(MyStore::open_temp().await) }).await;
//! }
//! ```
//!
//! Cases panic with a message naming the broken rule. The concurrency cases spawn tokio
//! tasks, so run the suite inside a tokio runtime (a multi-thread one exercises more).
//! A case assumes its store is empty and only it uses it.
//!
//! The suites are split by what they cover: [`records`] (puts, versions, unique keys),
//! [`refusals`] (refused batches write nothing; idempotency records), [`lists`] (per subkind and status, with totals), [`ledger`] (two-phase transfers and balance rules) and
//! [`workers`] (outbox order, claims, concurrency). `fixtures` holds the helpers they
//! share.
//!
//! [`case_screening`] is the conformance case of a sanctions
//! [`Screening`](crate::ports::Screening) adapter ([`screening`]).
//!
//! [`rail_suite`] is the same for a [`Rail`](crate::ports::Rail) over its chain, through
//! a [`RailHarness`] the rail's tests supply ([`rail`]); [`wrappers`] holds delegating
//! `Store` and `Rail` wrappers for tests that override one method.

mod fixtures;
pub mod ledger;
pub mod lists;
pub mod purge;
pub mod rail;
pub mod records;
pub mod refusals;
pub mod screening;
pub mod workers;
pub mod wrappers;

pub use ledger::*;
pub use lists::*;
pub use purge::*;
pub use rail::{RailHarness, rail_suite};
pub use records::*;
pub use refusals::*;
pub use screening::{ScreeningFixture, case_screening};
pub use workers::*;
pub use wrappers::*;

use crate::ports::ledger::Ledger;
use crate::ports::store::Store;
use std::future::Future;
use std::sync::Arc;

/// Runs every store + ledger case, each on a fresh store from `make`.
pub async fn store_suite<F, Fut, S>(make: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<S>>,
    S: Store + Ledger + ?Sized + 'static,
{
    macro_rules! run {
        ($($case:ident),* $(,)?) => {$(
            let store = make().await;
            $case(store.clone()).await;
            assert_posted_sum_zero(&*store, stringify!($case)).await;
        )*};
    }
    run!(
        case_insert_and_get,
        case_many_puts_in_one_batch,
        case_version_conflict,
        case_unchanged_checks,
        case_unique_keys,
        case_unique_violation_rolls_back_batch,
        case_keys_change_hands_in_one_batch,
        case_address_owned_by_one_product,
        case_single_step_failures_write_nothing,
        case_list,
        case_list_subkinds,
        case_list_before,
        case_idempotency,
        case_ledger_accounts,
        case_ledger_single_transfer,
        case_ledger_invalid_transfers,
        case_ledger_amount_limits,
        case_ledger_idempotent_transfer,
        case_ledger_insufficient_funds,
        case_ledger_allow_negative,
        case_ledger_pending_post,
        case_ledger_pending_void,
        case_ledger_resolution_rules,
        case_ledger_entries_since,
        case_failed_transfer_rolls_back_batch,
        case_outbox_sequence,
        case_claim_due,
        case_claim_lanes,
        case_concurrent_lane_claims,
        case_concurrent_debits,
        case_concurrent_claims,
        case_purge,
        case_purge_outbox,
    );
}

/// Panics unless the ledger's posted sums add up to zero.
pub async fn assert_posted_sum_zero<S: Ledger + ?Sized>(store: &S, case: &str) {
    let sum = store
        .posted_sum()
        .await
        .unwrap_or_else(|e| panic!("{case}: posted_sum failed: {e}"));
    assert_eq!(
        sum, 0,
        "{case}: posted_sum must be 0 (double entry), got {sum}"
    );
}
