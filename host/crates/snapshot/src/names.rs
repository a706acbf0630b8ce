//! Ids and names: what the snapshot numbers, and how names map to numbers.

use std::collections::HashMap;

/// A map keyed by names, hashed fast: the snapshot build looks names up
/// hundreds of thousands of times per cycle.
pub type NameMap<K> = HashMap<K, u32, foldhash::fast::RandomState>;

/// A fixed-seed, well-mixed 64-bit hasher for class identities (equal
/// hashes mean equal classes, so the mix must be good, not only fast).
pub(crate) fn class_hasher() -> impl std::hash::Hasher {
    use std::hash::BuildHasher;
    foldhash::quality::FixedState::with_seed(0x7e9a).build_hasher()
}

/// The id meaning "none".
pub const NONE: u32 = u32::MAX;

/// The class of a pending task that gets no class (see [`classless`]).
pub const CLASSLESS: u64 = u64::MAX;

/// Display names of the session's objects (kept out of the snapshot).
#[derive(Clone, Debug, Default)]
pub struct Names {
    /// Per node, its name.
    pub nodes: Vec<String>,
    /// Per queue, its name.
    pub queues: Vec<String>,
    /// `namespace/podgroup`.
    pub jobs: Vec<String>,
    /// `namespace/pod`.
    pub tasks: Vec<String>,
}

/// Strings by id, for the snapshot's string columns.
pub(crate) struct Interner {
    pub(crate) strings: Vec<String>,
    pub(crate) index: NameMap<String>,
}

impl Interner {
    pub(crate) fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.strings.len() as u32;
        self.strings.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}
