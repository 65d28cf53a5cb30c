//! A map value that holds one entry inline and more in a boxed slice: the per-event indexes of
//! namespace attribution hold an entry per event, and must not allocate per event.

use rustc_hash::FxHashMap as HashMap;

/// The entries under one hash: almost always one, kept inline so that an index with an entry
/// per event allocates nothing per event.
pub(super) enum Few<T> {
    One(T),
    /// A boxed slice, not a `Vec`: the enum stays as small as its one entry.
    More(Box<[T]>),
}

impl<T: Copy> Few<T> {
    pub(super) fn as_slice(&self) -> &[T] {
        match self {
            Few::One(x) => std::slice::from_ref(x),
            Few::More(v) => v,
        }
    }

    /// Adds `x` under `key` unless an entry `dup` says is the same is there already.
    pub(super) fn add<K: std::hash::Hash + Eq>(
        map: &mut HashMap<K, Few<T>>,
        key: K,
        x: T,
        dup: impl Fn(&T) -> bool,
    ) {
        use std::collections::hash_map::Entry;
        match map.entry(key) {
            Entry::Vacant(v) => {
                v.insert(Few::One(x));
            }
            Entry::Occupied(mut o) => {
                let few = o.get_mut();
                if few.as_slice().iter().any(dup) {
                    return;
                }
                let more: Box<[T]> = few.as_slice().iter().copied().chain([x]).collect();
                *few = Few::More(more);
            }
        }
    }
}
