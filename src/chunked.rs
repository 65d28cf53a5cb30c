//! A vector that grows by fixed-size chunks.
//!
//! The records kept for every session of a run (report headers, tool calls) number in the tens
//! of thousands on a large capture. A `Vec` doubles: while it grows it holds the old and the new
//! buffer at once, and afterwards up to half of it is slack, which made these few records the
//! largest term of the peak memory. Chunks never move and waste at most one chunk.

/// Elements per chunk.
const CHUNK: usize = 1024;

#[derive(Clone, Debug)]
pub struct ChunkedVec<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for ChunkedVec<T> {
    fn default() -> Self {
        ChunkedVec {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> ChunkedVec<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push(&mut self, value: T) {
        match self.chunks.last_mut() {
            Some(c) if c.len() < CHUNK => c.push(value),
            _ => {
                let mut c = Vec::with_capacity(CHUNK);
                c.push(value);
                self.chunks.push(c);
            }
        }
        self.len += 1;
    }

    pub fn get(&self, i: usize) -> Option<&T> {
        self.chunks.get(i / CHUNK)?.get(i % CHUNK)
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        self.chunks.get_mut(i / CHUNK)?.get_mut(i % CHUNK)
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks.iter().flatten()
    }

    /// Grows to `len` elements made by `fill`, if shorter.
    pub fn resize_with(&mut self, len: usize, mut fill: impl FnMut() -> T) {
        while self.len < len {
            self.push(fill());
        }
    }

    pub fn into_vec(self) -> Vec<T> {
        let mut v = Vec::with_capacity(self.len);
        for c in self.chunks {
            v.extend(c);
        }
        v
    }
}

impl<T> std::ops::Index<usize> for ChunkedVec<T> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        &self.chunks[i / CHUNK][i % CHUNK]
    }
}

impl<T> std::ops::IndexMut<usize> for ChunkedVec<T> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self.chunks[i / CHUNK][i % CHUNK]
    }
}

impl<T> From<Vec<T>> for ChunkedVec<T> {
    fn from(v: Vec<T>) -> Self {
        let mut c = ChunkedVec::default();
        c.extend(v);
        c
    }
}

impl<T> Extend<T> for ChunkedVec<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        for v in iter {
            self.push(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_like_a_vec_across_chunks() {
        let mut c = ChunkedVec::default();
        let n = CHUNK * 3 + 7;
        c.extend(0..n);
        assert_eq!(c.len(), n);
        assert_eq!(c.get(CHUNK), Some(&CHUNK));
        assert_eq!(c.get(n), None);
        *c.get_mut(n - 1).unwrap() = 0;
        assert_eq!(c.iter().filter(|&&x| x == 0).count(), 2);
        c.resize_with(n + 2, || 9);
        assert_eq!(c.len(), n + 2);
        let v = c.into_vec();
        assert_eq!(v.len(), n + 2);
        assert_eq!(v[CHUNK * 2 + 1], CHUNK * 2 + 1);
        assert_eq!(v[n + 1], 9);
    }
}
