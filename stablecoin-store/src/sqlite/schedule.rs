//! Which queued requests the writer puts into its next group.
//!
//! Interactive commits (a caller is waiting to answer an API request) go first: every
//! one already queued, up to `max_group`. Background requests (a worker's commits and
//! claims, [`Batch::background`](stablecoin_core::ports::Batch::background)) are held
//! and ride behind them, at most `max_background` per group while interactive work is
//! flowing.
//!
//! Why: the writer is the one serial resource, and under load a settlement backlog keeps
//! it busy. A worker advances its whole claim at once, so 64 operation saves reach the
//! writer together; in one group they took 5-9 ms, and every send queued behind that
//! group waited for it. Capped, a group with sends in it carries a few background
//! commits only (measured at a fixed 5k sends/s with the backlog growing: p50 4.2-4.7 ms
//! -> 2.4-2.6 ms, p99 24-29 ms -> 20-21 ms, and as many operations advanced).
//!
//! Background work is never starved: every group takes background requests when any are
//! held (a group may exceed `max_group` by up to `max_background` for that), and once a
//! group and the one before it had no interactive request, background requests fill
//! whole groups, so an idle API lets the backlog drain at full speed.

use std::collections::VecDeque;

pub(crate) struct Schedule<T> {
    held: VecDeque<T>,
    max_group: usize,
    max_background: usize,
    interactive_before: bool,
}

impl<T> Schedule<T> {
    /// `max_group` >= 1; `max_background` is raised to 1 (0 would starve the workers).
    pub(crate) fn new(max_group: usize, max_background: usize) -> Self {
        Schedule {
            held: VecDeque::new(),
            max_group: max_group.max(1),
            max_background: max_background.max(1),
            interactive_before: false,
        }
    }

    /// Holds a background request until a group has room for it (first in, first out).
    pub(crate) fn hold(&mut self, item: T) {
        self.held.push_back(item);
    }

    /// True when nothing is held: the writer may block waiting for a request.
    pub(crate) fn is_idle(&self) -> bool {
        self.held.is_empty()
    }

    /// True when the group of interactive requests is full: stop taking requests.
    pub(crate) fn is_full(&self, interactive: &[T]) -> bool {
        interactive.len() >= self.max_group
    }

    /// Completes a group made of the interactive requests taken: appends the held
    /// background requests it may carry, and remembers whether it had interactive ones.
    pub(crate) fn complete(&mut self, group: &mut Vec<T>) {
        let interactive = !group.is_empty();
        let room = if interactive || self.interactive_before {
            self.max_background
        } else {
            self.max_group
        };
        let take = room.min(self.held.len());
        group.extend(self.held.drain(..take));
        self.interactive_before = interactive;
    }

    /// Everything still held (the writer answers these when it closes).
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        self.held.drain(..)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(s: &mut Schedule<u32>, interactive: &[u32]) -> Vec<u32> {
        let mut g = interactive.to_vec();
        s.complete(&mut g);
        g
    }

    #[test]
    fn interactive_requests_come_first_and_background_rides_behind_capped() {
        let mut s = Schedule::new(8, 2);
        for i in 100..105 {
            s.hold(i);
        }
        assert_eq!(group(&mut s, &[1, 2, 3]), vec![1, 2, 3, 100, 101]);
        assert_eq!(group(&mut s, &[4]), vec![4, 102, 103]);
        assert!(!s.is_idle());
    }

    #[test]
    fn background_fills_whole_groups_once_the_api_is_quiet_for_a_group() {
        let mut s = Schedule::new(4, 1);
        for i in 100..110 {
            s.hold(i);
        }
        assert_eq!(group(&mut s, &[1]), vec![1, 100]);
        // The group before had interactive work: still capped.
        assert_eq!(group(&mut s, &[]), vec![101]);
        // Two quiet groups in a row: full groups.
        assert_eq!(group(&mut s, &[]), vec![102, 103, 104, 105]);
        assert_eq!(group(&mut s, &[]), vec![106, 107, 108, 109]);
        assert!(s.is_idle());
        assert_eq!(group(&mut s, &[]), Vec::<u32>::new());
    }

    #[test]
    fn a_full_interactive_group_still_carries_background_work() {
        let mut s = Schedule::new(3, 2);
        s.hold(100);
        let interactive = [1, 2, 3];
        assert!(s.is_full(&interactive));
        assert!(!s.is_full(&interactive[..2]));
        assert_eq!(group(&mut s, &interactive), vec![1, 2, 3, 100]);
    }

    #[test]
    fn a_zero_cap_is_raised_to_one_so_workers_are_never_starved() {
        let mut s = Schedule::new(0, 0);
        s.hold(100);
        s.hold(101);
        assert_eq!(group(&mut s, &[1]), vec![1, 100]);
        assert_eq!(group(&mut s, &[2]), vec![2, 101]);
    }

    #[test]
    fn drain_returns_what_is_held_in_order() {
        let mut s = Schedule::new(4, 1);
        s.hold(7);
        s.hold(8);
        assert_eq!(s.drain().collect::<Vec<_>>(), vec![7, 8]);
        assert!(s.is_idle());
    }
}
