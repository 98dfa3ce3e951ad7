//! Sandbox mode (spec 1 "Sandbox mode") over HTTP: test keys (`svc_sk_test_`) never move
//! money.
//!
//! The rule is the engine's ([`Engine::sandbox`](stablecoin_core::engine::Engine::sandbox)):
//! supported mutations (EVM provision, fund, transfer send, FX quote, link and
//! phone-change requests) are validated and priced as live and answered with `_sim_` ids,
//! storing nothing and sending no SMS; every other mutation is SANDBOX_UNSUPPORTED. Reads
//! pass through to the normal handlers. What stays here is HTTP's part: a simulated
//! response says `"simulated": true`, and each one is counted per route in `/metrics`.

use crate::api::types::{ChallengeResponse, OperationResponse, ProvisionResponse, QuoteResponse};
use crate::state::AppState;

/// A response that can say it was simulated.
pub trait Simulated {
    /// Sets the response's `simulated` flag, so the client sees nothing was stored or sent.
    fn mark_simulated(&mut self);
}

macro_rules! simulated {
    ($($t:ty),*) => {$(
        impl Simulated for $t {
            fn mark_simulated(&mut self) {
                self.simulated = true;
            }
        }
    )*};
}

simulated!(
    ProvisionResponse,
    ChallengeResponse,
    OperationResponse,
    QuoteResponse
);

/// The response of the sandbox simulation `view` of `route`: marked `"simulated": true`
/// and counted.
pub fn simulated<V, R: From<V> + Simulated>(app: &AppState, route: &str, view: V) -> R {
    let mut r = R::from(view);
    r.mark_simulated();
    app.metrics.simulation(route);
    r
}
