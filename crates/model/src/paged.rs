//! A vector that grows by fixed-size pages (it never doubles, and its elements never move).
//!
//! The records kept for every session of a run (report headers, tool calls) number in the tens
//! of thousands on a large capture. A `Vec` doubles: while it grows it holds the old and the new
//! buffer at once, and afterwards up to half of it is slack, which made these few records the
//! largest term of the peak memory. Pages never move and waste at most one page.

/// Elements per page.
const PAGE: usize = 1024;

#[derive(Clone, Debug)]
pub struct PagedVec<T> {
    pages: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for PagedVec<T> {
    fn default() -> Self {
        PagedVec {
            pages: Vec::new(),
            len: 0,
        }
    }
}

impl<T> PagedVec<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push(&mut self, value: T) {
        match self.pages.last_mut() {
            Some(p) if p.len() < PAGE => p.push(value),
            _ => {
                let mut p = Vec::with_capacity(PAGE);
                p.push(value);
                self.pages.push(p);
            }
        }
        self.len += 1;
    }

    pub fn get(&self, i: usize) -> Option<&T> {
        self.pages.get(i / PAGE)?.get(i % PAGE)
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        self.pages.get_mut(i / PAGE)?.get_mut(i % PAGE)
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.pages.iter().flatten()
    }

    /// Grows to `len` elements made by `fill`, if shorter.
    pub fn resize_with(&mut self, len: usize, mut fill: impl FnMut() -> T) {
        while self.len < len {
            self.push(fill());
        }
    }

    pub fn into_vec(self) -> Vec<T> {
        let mut v = Vec::with_capacity(self.len);
        for c in self.pages {
            v.extend(c);
        }
        v
    }
}

impl<T> std::ops::Index<usize> for PagedVec<T> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        &self.pages[i / PAGE][i % PAGE]
    }
}

impl<T> std::ops::IndexMut<usize> for PagedVec<T> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self.pages[i / PAGE][i % PAGE]
    }
}

impl<T> From<Vec<T>> for PagedVec<T> {
    fn from(v: Vec<T>) -> Self {
        let mut c = PagedVec::default();
        c.extend(v);
        c
    }
}

impl<T> Extend<T> for PagedVec<T> {
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
    fn behaves_like_a_vec_across_pages() {
        let mut c = PagedVec::default();
        let n = PAGE * 3 + 7;
        c.extend(0..n);
        assert_eq!(c.len(), n);
        assert_eq!(c.get(PAGE), Some(&PAGE));
        assert_eq!(c.get(n), None);
        *c.get_mut(n - 1).unwrap() = 0;
        assert_eq!(c.iter().filter(|&&x| x == 0).count(), 2);
        c.resize_with(n + 2, || 9);
        assert_eq!(c.len(), n + 2);
        let v = c.into_vec();
        assert_eq!(v.len(), n + 2);
        assert_eq!(v[PAGE * 2 + 1], PAGE * 2 + 1);
        assert_eq!(v[n + 1], 9);
    }
}
