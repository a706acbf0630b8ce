//! A vector that remembers how it changed, so the next session can be built
//! from the last one instead of from scratch.
//!
//! Reading goes through `Deref` as for any `Vec`. Any mutable access through
//! `DerefMut` (push, retain, `v[i].x = …`) counts as "anything may have
//! changed"; [`Tracked::status_mut`] is the narrow door that records "only
//! this item's status changed", which is what a cycle's binds, evictions and
//! phase updates are. A change that does not go through the narrow door is
//! seen as a whole change, so none is missed.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};

static IDENTITIES: AtomicU64 = AtomicU64::new(1);

/// A `Vec<T>` with a change record. A clone is a new identity: what changed
/// in one copy says nothing about the other.
pub struct Tracked<T> {
    items: Vec<T>,
    identity: u64,
    /// Bumped by every change.
    version: u64,
    /// The version of the last whole change.
    whole: u64,
    /// Per item, the version of its last status change.
    status: Vec<u64>,
}

/// Where a reader stands: the identity and version it last read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    identity: u64,
    version: u64,
}

/// What changed since a [`Mark`].
#[derive(Debug, PartialEq, Eq)]
pub enum Changes {
    /// Anything may have changed (another copy, or a change outside
    /// [`Tracked::status_mut`]).
    Whole,
    /// Only the statuses of these items, in index order.
    Status(Vec<usize>),
}

impl<T> Tracked<T> {
    /// Where a reader of the current contents stands.
    pub fn mark(&self) -> Mark {
        Mark { identity: self.identity, version: self.version }
    }

    /// Whether anything but statuses may have changed since `mark` (cheap:
    /// no list of the items whose status changed).
    pub fn changed_whole_since(&self, mark: Mark) -> bool {
        mark.identity != self.identity || self.whole > mark.version || mark.version > self.version
    }

    /// What changed since `mark`.
    pub fn changes_since(&self, mark: Mark) -> Changes {
        if self.changed_whole_since(mark) {
            return Changes::Whole;
        }
        if mark.version == self.version {
            return Changes::Status(Vec::new());
        }
        Changes::Status((0..self.status.len()).filter(|&i| self.status[i] > mark.version).collect())
    }

    /// Item `i` for a change of its status only (see [`Status`]).
    pub fn status_mut(&mut self, i: usize) -> T::Fields<'_>
    where
        T: Status,
    {
        let item = &mut self.items[i];
        if self.status.len() <= i {
            self.status.resize(i + 1, 0);
        }
        self.version += 1;
        self.status[i] = self.version;
        item.status_fields()
    }

    fn whole_change(&mut self) {
        self.version += 1;
        self.whole = self.version;
    }
}

/// An item with a status part that changes often and a spec that seldom
/// does; `Fields` exposes the status part only.
pub trait Status {
    /// Mutable references to the status fields.
    type Fields<'a>
    where
        Self: 'a;
    /// The status fields, to change them.
    fn status_fields(&mut self) -> Self::Fields<'_>;
}

impl<T> From<Vec<T>> for Tracked<T> {
    fn from(items: Vec<T>) -> Self {
        let status = vec![0; items.len()];
        Tracked { items, identity: IDENTITIES.fetch_add(1, Ordering::Relaxed), version: 0, whole: 0, status }
    }
}

impl<T> Default for Tracked<T> {
    fn default() -> Self {
        Vec::new().into()
    }
}

impl<T: Clone> Clone for Tracked<T> {
    fn clone(&self) -> Self {
        self.items.clone().into()
    }
}

/// Formats as the items alone, like a `Vec`.
impl<T: std::fmt::Debug> std::fmt::Debug for Tracked<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.items.fmt(f)
    }
}

impl<T> Deref for Tracked<T> {
    type Target = Vec<T>;
    fn deref(&self) -> &Vec<T> {
        &self.items
    }
}

impl<T> DerefMut for Tracked<T> {
    fn deref_mut(&mut self) -> &mut Vec<T> {
        self.whole_change();
        &mut self.items
    }
}

impl<'a, T> IntoIterator for &'a Tracked<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, Default)]
    struct Item {
        spec: u32,
        state: u32,
    }

    impl Status for Item {
        type Fields<'a> = &'a mut u32;
        fn status_fields(&mut self) -> &mut u32 {
            &mut self.state
        }
    }

    #[test]
    fn status_changes_are_listed_and_anything_else_is_whole() {
        let mut v: Tracked<Item> = vec![Item::default(); 4].into();
        let m = v.mark();
        assert_eq!(v.changes_since(m), Changes::Status(vec![]));
        *v.status_mut(2) = 7;
        *v.status_mut(0) = 1;
        assert_eq!(v.changes_since(m), Changes::Status(vec![0, 2]));
        let m2 = v.mark();
        *v.status_mut(3) = 1;
        assert_eq!(v.changes_since(m2), Changes::Status(vec![3]));
        v[1].spec = 9;
        assert_eq!(v.changes_since(m2), Changes::Whole);
        let m3 = v.mark();
        v.push(Item::default());
        assert_eq!(v.changes_since(m3), Changes::Whole);
        let m4 = v.mark();
        *v.status_mut(4) = 2; // the pushed item has a status slot
        assert_eq!(v.changes_since(m4), Changes::Status(vec![4]));
        let copy = v.clone();
        assert_eq!(copy.changes_since(m4), Changes::Whole);
    }
}
