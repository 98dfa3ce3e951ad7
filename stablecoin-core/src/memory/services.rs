//! In-memory adapters of the small ports, instrumented for tests.

use crate::domain::money::{Currency, Token};
use crate::domain::phone::Phone;
use crate::domain::time::Timestamp;
use crate::ports::services::*;
use async_trait::async_trait;
use rust_decimal::Decimal;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// Records every SMS; can be told to fail.
#[derive(Debug, Default)]
pub struct MemoryNotifier {
    sent: Mutex<Vec<(Phone, SmsMessage)>>,
    fail: std::sync::atomic::AtomicBool,
}

impl MemoryNotifier {
    /// A notifier that sends everything and has sent nothing yet.
    pub fn new() -> Self {
        Self::default()
    }
    /// Every message sent so far, oldest first, with its recipient.
    pub fn sent(&self) -> Vec<(Phone, SmsMessage)> {
        self.sent.lock().map(|v| v.clone()).unwrap_or_default()
    }
    /// The newest message of `kind` sent to `to`.
    pub fn last_to(&self, to: &Phone, kind: SmsKind) -> Option<SmsMessage> {
        self.sent()
            .into_iter()
            .rev()
            .find(|(p, m)| p == to && m.kind == kind)
            .map(|(_, m)| m)
    }
    /// The one-time code in the newest code message to `to` (the first 6-digit run).
    pub fn last_code_to(&self, to: &Phone) -> Option<String> {
        self.sent()
            .into_iter()
            .rev()
            .find(|(p, m)| {
                p == to
                    && matches!(
                        m.kind,
                        SmsKind::LinkCode | SmsKind::PhoneChangeCode | SmsKind::PaymentCode
                    )
            })
            .and_then(|(_, m)| {
                m.text
                    .split(|c: char| !c.is_ascii_digit())
                    .find(|w| w.len() == 6)
                    .map(str::to_string)
            })
    }
    /// While `true`, every send fails with a [`NotifyError`] and records nothing.
    pub fn set_failing(&self, fail: bool) {
        self.fail.store(fail, Ordering::SeqCst);
    }
}

#[async_trait]
impl Notifier for MemoryNotifier {
    async fn send_sms(&self, to: &Phone, message: &SmsMessage) -> Result<SmsAccepted, NotifyError> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(NotifyError::retryable("injected failure"));
        }
        // Random ids: a process restarted over the same store must not hand out an id
        // an earlier process gave (they are unique keys of the delivery records).
        let mut id = [0u8; 12];
        getrandom::fill(&mut id).map_err(|e| NotifyError::retryable(e.to_string()))?;
        let message_id = format!(
            "mem-{}",
            id.iter().map(|b| format!("{b:02x}")).collect::<String>()
        );
        if let Ok(mut v) = self.sent.lock() {
            v.push((to.clone(), message.clone()));
        }
        Ok(SmsAccepted { message_id })
    }
}

/// A fixed table of rates (local units per token); unknown pairs fail.
#[derive(Debug, Default)]
pub struct FixedRates {
    rates: Mutex<HashMap<(String, Token), Decimal>>,
}

impl FixedRates {
    /// An empty table: every rate fails until [`FixedRates::set`].
    pub fn new() -> Self {
        Self::default()
    }
    /// Illustrative demo rates for the reference server's simulated mode: one for every
    /// currency of `CURRENCIES`, so no quote or payout the API accepts lacks a rate.
    pub fn demo() -> Self {
        let r = Self::new();
        for (code, rate) in [
            ("XOF", "600.00"),
            ("XAF", "600.00"),
            ("NGN", "1550.00"),
            ("GHS", "15.50"),
            ("KES", "129.00"),
            ("UGX", "3700.00"),
            ("TZS", "2650.00"),
            ("RWF", "1400.00"),
            ("ZAR", "18.20"),
            ("EGP", "48.50"),
            ("MAD", "10.00"),
            ("GNF", "8600.00"),
            ("CDF", "2800.00"),
            ("ZMW", "26.50"),
            ("USD", "1.00"),
            ("EUR", "0.92"),
        ] {
            if let Ok(d) = rate.parse::<Decimal>() {
                for t in Token::ALL {
                    r.set(code, t, d);
                }
            }
        }
        r
    }
    /// Sets the rate of `currency` (ISO 4217 code) per one `token`, replacing any earlier.
    pub fn set(&self, currency: &str, token: Token, rate: Decimal) {
        if let Ok(mut m) = self.rates.lock() {
            m.insert((currency.to_string(), token), rate);
        }
    }
}

#[async_trait]
impl RateSource for FixedRates {
    async fn rate(&self, currency: Currency, token: Token) -> Result<Decimal, RateError> {
        self.rates
            .lock()
            .ok()
            .and_then(|m| m.get(&(currency.code.to_string(), token)).copied())
            .ok_or_else(|| {
                RateError::Unavailable(format!("no rate for {}_{}", currency.code, token))
            })
    }
}

/// A mobile-money provider simulation, idempotent by payout id as the port requires:
/// payouts stay `Pending` until [`MemoryPayouts::settle_all`] (the provider paying them,
/// or failing them for phones registered with `fail_for`) or [`MemoryPayouts::fail`].
#[derive(Debug, Default)]
pub struct MemoryPayouts {
    payouts: Mutex<HashMap<String, (Payout, PayoutStatus)>>,
    failing_phones: Mutex<Vec<Phone>>,
    faults: Mutex<Vec<PayoutFault>>,
    submits: AtomicU64,
}

/// A fault for the next payout submission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PayoutFault {
    /// The provider refuses it outright.
    Reject,
    /// Recorded by the provider, but the answer is lost (`Unknown`).
    LostResponse,
    /// Lost before reaching the provider (`Unknown`, never recorded).
    Drop,
}

impl MemoryPayouts {
    /// A provider holding no payouts, with no faults or failing phones.
    pub fn new() -> Self {
        Self::default()
    }
    /// Queues `fault` for a later submission: each submission takes the oldest queued
    /// fault, so several injections hit consecutive submissions in order.
    pub fn inject(&self, fault: PayoutFault) {
        if let Ok(mut v) = self.faults.lock() {
            v.push(fault);
        }
    }
    /// Payouts the provider recorded (each id once).
    pub fn submit_count(&self) -> u64 {
        self.submits.load(Ordering::SeqCst)
    }
    /// Makes [`MemoryPayouts::settle_all`] fail, rather than deliver, payouts to `phone`
    /// (its operator refusing them).
    pub fn fail_for(&self, phone: Phone) {
        if let Ok(mut v) = self.failing_phones.lock() {
            v.push(phone);
        }
    }
    /// Delivers every pending payout (the provider's callback, simulated).
    pub fn settle_all(&self) {
        let failing = self
            .failing_phones
            .lock()
            .map(|v| v.clone())
            .unwrap_or_default();
        if let Ok(mut m) = self.payouts.lock() {
            for (id, (p, st)) in m.iter_mut() {
                if *st == PayoutStatus::Pending {
                    *st = if failing.contains(&p.phone) {
                        PayoutStatus::Failed {
                            reason: "recipient mobile-money account rejected the payout".into(),
                        }
                    } else {
                        PayoutStatus::Delivered {
                            reference: format!("mm_{id}"),
                        }
                    };
                }
            }
        }
    }
    /// The provider gives up on one pending payout (its final word: `Failed`).
    pub fn fail(&self, payout_id: &str, reason: &str) {
        if let Ok(mut m) = self.payouts.lock()
            && let Some((_, st)) = m.get_mut(payout_id)
            && *st == PayoutStatus::Pending
        {
            *st = PayoutStatus::Failed {
                reason: reason.to_string(),
            };
        }
    }
    /// Where the provider has one payout (`NotFound` if it never received it).
    pub fn status_of(&self, payout_id: &str) -> PayoutStatus {
        self.payouts
            .lock()
            .ok()
            .and_then(|m| m.get(payout_id).map(|(_, s)| s.clone()))
            .unwrap_or(PayoutStatus::NotFound)
    }
    /// Every payout the provider holds, with its status, in no particular order.
    pub fn payouts(&self) -> Vec<(Payout, PayoutStatus)> {
        self.payouts
            .lock()
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }
}

#[async_trait]
impl PayoutProvider for MemoryPayouts {
    fn identity(&self) -> String {
        "memory".into()
    }
    fn resubmit_is_idempotent(&self) -> bool {
        true
    }
    async fn submit(&self, payout: &Payout) -> Result<(), PayoutError> {
        let fault = self
            .faults
            .lock()
            .ok()
            .and_then(|mut v| (!v.is_empty()).then(|| v.remove(0)));
        if fault == Some(PayoutFault::Reject) {
            return Err(PayoutError::Rejected("provider refused the payout".into()));
        }
        if fault == Some(PayoutFault::Drop) {
            return Err(PayoutError::Unknown(
                "connection reset before the provider answered".into(),
            ));
        }
        let mut m = self
            .payouts
            .lock()
            .map_err(|_| PayoutError::Unknown("poisoned".into()))?;
        if !m.contains_key(&payout.id) {
            self.submits.fetch_add(1, Ordering::SeqCst);
            m.insert(payout.id.clone(), (payout.clone(), PayoutStatus::Pending));
        }
        if fault == Some(PayoutFault::LostResponse) {
            return Err(PayoutError::Unknown(
                "timeout waiting for the provider".into(),
            ));
        }
        Ok(())
    }
    async fn status(&self, payout_id: &str) -> Result<PayoutStatus, PayoutError> {
        let m = self
            .payouts
            .lock()
            .map_err(|_| PayoutError::Unknown("poisoned".into()))?;
        Ok(m.get(payout_id)
            .map(|(_, s)| s.clone())
            .unwrap_or(PayoutStatus::NotFound))
    }
}

/// The system clock, moved forward by what its owner asks: time flows as usual, and a
/// test can jump past a cache's lifetime or an expiry instead of sleeping through it
/// (a [`ManualClock`] would stop every timer of a live server that reads the clock).
#[derive(Debug, Default)]
pub struct ShiftedClock(AtomicI64);

impl ShiftedClock {
    /// The system clock, not shifted yet.
    pub fn new() -> Self {
        ShiftedClock(AtomicI64::new(0))
    }
    /// Moves the clock forward by `ms` milliseconds, for good.
    pub fn advance_ms(&self, ms: i64) {
        assert!(ms >= 0, "a shifted clock only moves forward");
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ShiftedClock {
    fn now(&self) -> Timestamp {
        Timestamp(SystemClock.now().0 + self.0.load(Ordering::SeqCst))
    }
}

/// A clock that moves only when told to.
#[derive(Debug)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// A clock reading `start` until moved.
    pub fn new(start: Timestamp) -> Self {
        ManualClock(AtomicI64::new(start.0))
    }
    /// Moves the clock by `ms` milliseconds (negative moves it back).
    pub fn advance_ms(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
    /// Sets the clock to `t`, forwards or backwards.
    pub fn set(&self, t: Timestamp) {
        self.0.store(t.0, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.0.load(Ordering::SeqCst))
    }
}

/// The operating system's randomness.
#[derive(Debug, Default, Clone, Copy)]
pub struct OsEntropy;

impl Entropy for OsEntropy {
    fn fill(&self, buf: &mut [u8]) {
        if getrandom::fill(buf).is_err() {
            // No OS randomness is unrecoverable for a money service: refuse to continue
            // rather than hand out guessable codes or ids.
            panic!("operating system randomness is unavailable");
        }
    }
}

/// Deterministic randomness (SHA-256 in counter mode) for simulations.
#[derive(Debug)]
pub struct SeededEntropy {
    seed: u64,
    counter: AtomicU64,
}

impl SeededEntropy {
    /// A stream fixed by `seed`: the same seed yields the same bytes, so a simulation's
    /// ids and codes repeat from run to run.
    pub fn new(seed: u64) -> Self {
        SeededEntropy {
            seed,
            counter: AtomicU64::new(0),
        }
    }
}

impl Entropy for SeededEntropy {
    fn fill(&self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(32) {
            let n = self.counter.fetch_add(1, Ordering::SeqCst);
            let mut h = Sha256::new();
            h.update(self.seed.to_le_bytes());
            h.update(n.to_le_bytes());
            let d = h.finalize();
            chunk.copy_from_slice(&d[..chunk.len()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::money::CURRENCIES;

    #[tokio::test]
    async fn demo_rates_cover_every_supported_currency_and_token() {
        let rates = FixedRates::demo();
        for c in CURRENCIES {
            for t in Token::ALL {
                assert!(rates.rate(*c, t).await.is_ok(), "{} {t}", c.code);
            }
        }
    }
}
