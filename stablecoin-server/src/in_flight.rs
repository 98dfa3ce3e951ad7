//! The idempotency key of a request: its header, and the keys of requests running in this
//! process (see [`crate::idempotency`]).
//! Its own module because the server's state holds the set and every handler takes the
//! state: in `idempotency` it tied the state into that module's import cycle (issue #45).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// The request header carrying the client's idempotency key (lower-case, as `http` names
/// it). Here, not in `idempotency`, because the body extractor (`extract`) names it and
/// `idempotency` uses the extractor's errors.
pub const HEADER: &str = "idempotency-key";

/// Keys of requests running in this process, per tenant.
#[derive(Default)]
pub struct InFlight(Mutex<HashSet<(String, String)>>);

/// Removes its key from the in-flight set when dropped (also when the request is
/// cancelled because the client went away).
pub struct InFlightGuard {
    set: Arc<InFlight>,
    key: (String, String),
}

impl InFlight {
    /// Marks `key` as running for `tenant`; `None` when a request with it already runs
    /// in this process (answer `409 IDEMPOTENCY_KEY_IN_USE`). Drop the guard to release it.
    pub fn try_acquire(self: &Arc<Self>, tenant: &str, key: &str) -> Option<InFlightGuard> {
        let k = (tenant.to_string(), key.to_string());
        let mut set = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if !set.insert(k.clone()) {
            return None;
        }
        Some(InFlightGuard {
            set: self.clone(),
            key: k,
        })
    }
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        let mut set = self.set.0.lock().unwrap_or_else(|e| e.into_inner());
        set.remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_flight_is_exclusive_and_released() {
        let set = Arc::new(InFlight::default());
        let g = set.try_acquire("t", "k").unwrap();
        assert!(set.try_acquire("t", "k").is_none());
        assert!(set.try_acquire("u", "k").is_some());
        drop(g);
        assert!(set.try_acquire("t", "k").is_some());
    }
}
