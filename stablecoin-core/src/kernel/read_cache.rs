//! A short-lived cache for the reads that every authenticated request repeats: the API
//! key behind a secret, and the tenant record (its pricing, read by every send).
//!
//! Why: under a send load these two point reads were ~12% of the server's CPU, for
//! records that change a few times in their life. Why short-lived and not coherent:
//! the engine invalidates its own writes at once (revoking a key, setting pricing in
//! this process), but another process on the same database (the admin CLI, a second
//! API node) cannot reach this memory; its change is seen once the entry expires. The
//! window is `EngineConfig::read_cache_ms` (default 1 s; 0 turns the cache off). Only
//! positive answers are kept: a key issued elsewhere works at once, and an unknown or
//! revoked key is read again every time.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;

/// Entries expire `ttl_ms` after they were read, by the engine's clock.
pub(crate) struct TtlCache<K, V> {
    ttl_ms: i64,
    /// When full, the whole map is dropped: simpler than LRU, and refilling costs one
    /// read per live key.
    max_entries: usize,
    map: Mutex<HashMap<K, (V, i64)>>,
}

impl<K: Eq + Hash, V: Clone> TtlCache<K, V> {
    pub(crate) fn new(ttl_ms: i64, max_entries: usize) -> Self {
        TtlCache {
            ttl_ms,
            max_entries,
            map: Mutex::new(HashMap::new()),
        }
    }

    fn enabled(&self) -> bool {
        self.ttl_ms > 0
    }

    pub(crate) fn get(&self, key: &K, now_ms: i64) -> Option<V> {
        if !self.enabled() {
            return None;
        }
        let map = self.map.lock().ok()?;
        match map.get(key) {
            Some((v, expires)) if now_ms < *expires => Some(v.clone()),
            _ => None,
        }
    }

    pub(crate) fn put(&self, key: K, value: V, now_ms: i64) {
        if !self.enabled() {
            return;
        }
        if let Ok(mut map) = self.map.lock() {
            if map.len() >= self.max_entries {
                map.clear();
            }
            map.insert(key, (value, now_ms.saturating_add(self.ttl_ms)));
        }
    }

    pub(crate) fn remove(&self, key: &K) {
        if let Ok(mut map) = self.map.lock() {
            map.remove(key);
        }
    }

    /// Drops every entry whose value matches (e.g. every secret of a revoked key id).
    pub(crate) fn remove_where(&self, mut matches: impl FnMut(&V) -> bool) {
        if let Ok(mut map) = self.map.lock() {
            map.retain(|_, (v, _)| !matches(v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_after_the_ttl_and_zero_disables() {
        let c = TtlCache::new(1_000, 8);
        c.put("a", 1, 10_000);
        assert_eq!(c.get(&"a", 10_999), Some(1));
        assert_eq!(c.get(&"a", 11_000), None);
        let off = TtlCache::new(0, 8);
        off.put("a", 1, 0);
        assert_eq!(off.get(&"a", 0), None);
    }

    #[test]
    fn removal_by_key_and_by_value_and_a_full_map_starts_over() {
        let c = TtlCache::new(1_000, 3);
        c.put("a", 1, 0);
        c.put("b", 2, 0);
        c.put("c", 2, 0);
        c.remove(&"a");
        assert_eq!(c.get(&"a", 1), None);
        c.remove_where(|v| *v == 2);
        assert_eq!((c.get(&"b", 1), c.get(&"c", 1)), (None, None));
        for (i, k) in ["d", "e", "f", "g"].into_iter().enumerate() {
            c.put(k, i, 0);
        }
        // The fourth insert found the map full and started over.
        assert_eq!((c.get(&"d", 1), c.get(&"g", 1)), (None, Some(3)));
    }
}
