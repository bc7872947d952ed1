//! Intrusive LRU lists over flat arrays: [`Lists`], several doubly linked lists sharing
//! one array of nodes `0..n`, and [`Lru`], the common case of a single list.
//!
//! Every scheme that keeps things in recency (or arrival) order uses these: the page and
//! block write buffers and C-lash's spaces (`ftlab-buffer`), the cached mapping table of
//! the demand-paged FTLs, BAST's log blocks, and Superblock FTL's superblocks and map
//! pages (`ftlab-ftl`).
//!
//! Why intrusive lists over flat arrays rather than a crate such as `lru` (a hash map
//! threaded by a linked list) or a `VecDeque`:
//! - No allocation per request. Both arrays are sized once, at construction, from the
//!   geometry and the scheme's options; every operation is O(1) and touches a few words,
//!   and this code runs on every host request.
//! - Node ids are the schemes' own numbers: logical block numbers, buffer slots, cache
//!   entries, log-block descriptors, superblock numbers. There is no key to hash and no
//!   value to store: a scheme keeps its data in its own arrays indexed by the same
//!   number, and the list only orders the numbers. Removing a node from the middle
//!   needs no search.
//! - Several lists share one node array, and a node is on at most one of them: moving a
//!   block from a buffer's hot list to its cold list is an unlink and a link, and which
//!   list a node is on is one load.
//!
//! Orientation: the *front* of a list is its most recently used end, the *back* its
//! least recently used end. [`Lists::newer`] steps towards the front,
//! [`Lists::older`] towards the back, and [`Lists::iter`] walks from the front (its
//! `rev()` from the back). A FIFO queue is a list pushed at the front and taken from
//! the back.
//!
//! Memory: 12 bytes per node (two links and the list id) and 12 per list.
//!
//! One implementation serves both types: [`Lru`] keeps its single list's ends inline
//! instead of in a `Vec`, so the per-request path of the single-list schemes pays no
//! indirection or bounds check for them.

use std::fmt::Debug;
use std::iter::FusedIterator;

/// No node: the end of a list, or a node on no list.
pub const NIL: u32 = u32::MAX;

/// The links of one node. `list == NIL`: on no list (and both links are `NIL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Node {
    /// The next node towards the front (more recently used).
    newer: u32,
    /// The next node towards the back (less recently used).
    older: u32,
    /// The list the node is on.
    list: u32,
}

const UNLISTED: Node = Node {
    newer: NIL,
    older: NIL,
    list: NIL,
};

/// Both ends and the length of one list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ends {
    front: u32,
    back: u32,
    len: u32,
}

const EMPTY: Ends = Ends {
    front: NIL,
    back: NIL,
    len: 0,
};

/// Where the ends of the lists are kept: a `Vec` for [`Lists`], an array of one (a
/// constant index, so no bounds check) for [`Lru`].
trait EndsOf: Clone + Debug {
    fn of(&self, list: u32) -> &Ends;
    fn of_mut(&mut self, list: u32) -> &mut Ends;
    fn all(&self) -> &[Ends];
}

impl EndsOf for Vec<Ends> {
    #[inline]
    fn of(&self, list: u32) -> &Ends {
        &self[list as usize]
    }

    #[inline]
    fn of_mut(&mut self, list: u32) -> &mut Ends {
        &mut self[list as usize]
    }

    fn all(&self) -> &[Ends] {
        self
    }
}

impl EndsOf for [Ends; 1] {
    #[inline]
    fn of(&self, list: u32) -> &Ends {
        debug_assert_eq!(list, 0);
        &self[0]
    }

    #[inline]
    fn of_mut(&mut self, list: u32) -> &mut Ends {
        debug_assert_eq!(list, 0);
        &mut self[0]
    }

    fn all(&self) -> &[Ends] {
        self
    }
}

/// The one implementation behind [`Lists`] and [`Lru`] (documented on [`Lists`]).
#[derive(Clone, Debug)]
struct Links<E> {
    nodes: Vec<Node>,
    ends: E,
}

impl<E: EndsOf> Links<E> {
    fn new(nodes: u32, ends: E) -> Links<E> {
        assert!(nodes < NIL, "lists: {nodes} nodes must be below {NIL}");
        Links {
            nodes: vec![UNLISTED; nodes as usize],
            ends,
        }
    }

    #[inline]
    fn list_of(&self, node: u32) -> Option<u32> {
        let l = self.nodes[node as usize].list;
        (l != NIL).then_some(l)
    }

    #[inline]
    fn front(&self, list: u32) -> Option<u32> {
        let f = self.ends.of(list).front;
        (f != NIL).then_some(f)
    }

    #[inline]
    fn back(&self, list: u32) -> Option<u32> {
        let b = self.ends.of(list).back;
        (b != NIL).then_some(b)
    }

    #[inline]
    fn newer(&self, node: u32) -> Option<u32> {
        let n = self.nodes[node as usize].newer;
        (n != NIL).then_some(n)
    }

    #[inline]
    fn older(&self, node: u32) -> Option<u32> {
        let o = self.nodes[node as usize].older;
        (o != NIL).then_some(o)
    }

    #[inline]
    fn push_front(&mut self, list: u32, node: u32) {
        self.assert_unlisted(node);
        self.link_front(list, node);
    }

    #[inline]
    fn push_back(&mut self, list: u32, node: u32) {
        self.assert_unlisted(node);
        self.link_back(list, node);
    }

    #[inline]
    fn move_to_front(&mut self, list: u32, node: u32) {
        let n = self.nodes[node as usize];
        if n.list == list && n.newer == NIL {
            return; // already there
        }
        if n.list != NIL {
            self.detach(n);
        }
        self.link_front(list, node);
    }

    #[inline]
    fn move_to_back(&mut self, list: u32, node: u32) {
        let n = self.nodes[node as usize];
        if n.list == list && n.older == NIL {
            return; // already there
        }
        if n.list != NIL {
            self.detach(n);
        }
        self.link_back(list, node);
    }

    #[inline]
    fn remove(&mut self, node: u32) -> bool {
        let n = self.nodes[node as usize];
        if n.list == NIL {
            return false;
        }
        self.detach(n);
        self.nodes[node as usize] = UNLISTED;
        true
    }

    #[inline]
    fn pop_back(&mut self, list: u32) -> Option<u32> {
        let b = self.back(list)?;
        self.remove(b);
        Some(b)
    }

    #[inline]
    fn pop_front(&mut self, list: u32) -> Option<u32> {
        let f = self.front(list)?;
        self.remove(f);
        Some(f)
    }

    #[inline]
    fn iter(&self, list: u32) -> Iter<'_> {
        let e = self.ends.of(list);
        Iter {
            nodes: &self.nodes,
            front: e.front,
            back: e.back,
            left: e.len,
        }
    }

    fn check(&self) -> Result<(), String> {
        let mut linked = 0u64;
        for (l, e) in self.ends.all().iter().enumerate() {
            let mut n = 0u32;
            let mut newer = NIL;
            let mut cur = e.front;
            while cur != NIL {
                let node = self.nodes[cur as usize];
                if node.list != l as u32 {
                    return Err(format!(
                        "node {cur} is linked in list {l} but marked on list {}",
                        node.list
                    ));
                }
                if node.newer != newer {
                    return Err(format!("node {cur}: link to the front broken in list {l}"));
                }
                n += 1;
                if n as usize > self.nodes.len() {
                    return Err(format!("list {l} has a cycle"));
                }
                newer = cur;
                cur = node.older;
            }
            if newer != e.back {
                return Err(format!("list {l}: the back is not the last node"));
            }
            if n != e.len {
                return Err(format!("list {l}: {n} nodes but length {}", e.len));
            }
            linked += n as u64;
        }
        let marked = self.nodes.iter().filter(|n| n.list != NIL).count() as u64;
        if marked != linked {
            return Err(format!(
                "{marked} nodes marked on lists but {linked} linked"
            ));
        }
        Ok(())
    }

    #[inline]
    fn assert_unlisted(&self, node: u32) {
        let on = self.nodes[node as usize].list;
        assert!(on == NIL, "node {node} is already on list {on}");
    }

    /// Links `node`, on no list, at the front of `list`.
    #[inline]
    fn link_front(&mut self, list: u32, node: u32) {
        let e = self.ends.of_mut(list);
        let old = e.front;
        e.front = node;
        e.len += 1;
        if old == NIL {
            e.back = node;
        } else {
            self.nodes[old as usize].newer = node;
        }
        self.nodes[node as usize] = Node {
            newer: NIL,
            older: old,
            list,
        };
    }

    // The mirror of `link_front` (front and back, newer and older swapped), written out
    // rather than parameterized by direction: this runs on every request.
    /// Links `node`, on no list, at the back of `list`.
    #[inline]
    fn link_back(&mut self, list: u32, node: u32) {
        let e = self.ends.of_mut(list);
        let old = e.back;
        e.back = node;
        e.len += 1;
        if old == NIL {
            e.front = node;
        } else {
            self.nodes[old as usize].older = node;
        }
        self.nodes[node as usize] = Node {
            newer: old,
            older: NIL,
            list,
        };
    }

    /// Unlinks the node whose links are `n` from its list `n.list`: its neighbours and
    /// the list's ends no longer point to it. Its own links are left for the caller to
    /// overwrite.
    #[inline]
    fn detach(&mut self, n: Node) {
        let e = self.ends.of_mut(n.list);
        if n.newer == NIL {
            e.front = n.older;
        } else {
            self.nodes[n.newer as usize].older = n.older;
        }
        if n.older == NIL {
            e.back = n.newer;
        } else {
            self.nodes[n.older as usize].newer = n.newer;
        }
        e.len -= 1;
    }
}

/// Several doubly linked lists over node ids `0..nodes`; each node is on at most one
/// list. Lists are numbered `0..lists`. The front of a list is its most recently used
/// end, the back its least recently used end.
#[derive(Clone, Debug)]
pub struct Lists(Links<Vec<Ends>>);

// The public methods of `Lists` and `Lru` delegate to `Links`, one with a list argument,
// the other with list 0: the implementation is not repeated, only the signatures.
impl Lists {
    /// `lists` empty lists over `nodes` nodes. Both must be below [`NIL`].
    pub fn new(nodes: u32, lists: u32) -> Lists {
        assert!(lists < NIL, "lists: {lists} lists must be below {NIL}");
        Lists(Links::new(nodes, vec![EMPTY; lists as usize]))
    }

    /// Node ids are `0..nodes()`.
    #[inline]
    pub fn nodes(&self) -> u32 {
        self.0.nodes.len() as u32
    }

    /// List ids are `0..lists()`.
    #[inline]
    pub fn lists(&self) -> u32 {
        self.0.ends.len() as u32
    }

    /// The list `node` is on.
    #[inline]
    pub fn list_of(&self, node: u32) -> Option<u32> {
        self.0.list_of(node)
    }

    /// Whether `node` is on any list.
    #[inline]
    pub fn contains(&self, node: u32) -> bool {
        self.0.list_of(node).is_some()
    }

    /// Nodes on `list`.
    #[inline]
    pub fn len(&self, list: u32) -> u32 {
        self.0.ends.of(list).len
    }

    /// Whether `list` has no node.
    #[inline]
    pub fn is_empty(&self, list: u32) -> bool {
        self.len(list) == 0
    }

    /// The most recently used node of `list`.
    #[inline]
    pub fn front(&self, list: u32) -> Option<u32> {
        self.0.front(list)
    }

    /// The least recently used node of `list`.
    #[inline]
    pub fn back(&self, list: u32) -> Option<u32> {
        self.0.back(list)
    }

    /// The node after `node` towards the front of its list (more recently used).
    #[inline]
    pub fn newer(&self, node: u32) -> Option<u32> {
        self.0.newer(node)
    }

    /// The node after `node` towards the back of its list (less recently used).
    #[inline]
    pub fn older(&self, node: u32) -> Option<u32> {
        self.0.older(node)
    }

    /// Puts `node`, which must be on no list, at the front of `list`.
    #[inline]
    pub fn push_front(&mut self, list: u32, node: u32) {
        self.0.push_front(list, node);
    }

    /// Puts `node`, which must be on no list, at the back of `list`.
    #[inline]
    pub fn push_back(&mut self, list: u32, node: u32) {
        self.0.push_back(list, node);
    }

    /// Moves `node` (on any list or none) to the front of `list`.
    #[inline]
    pub fn move_to_front(&mut self, list: u32, node: u32) {
        self.0.move_to_front(list, node);
    }

    /// Moves `node` (on any list or none) to the back of `list`.
    #[inline]
    pub fn move_to_back(&mut self, list: u32, node: u32) {
        self.0.move_to_back(list, node);
    }

    /// Takes `node` off its list; returns whether it was on one (no-op if not).
    #[inline]
    pub fn remove(&mut self, node: u32) -> bool {
        self.0.remove(node)
    }

    /// Takes the least recently used node off `list`.
    #[inline]
    pub fn pop_back(&mut self, list: u32) -> Option<u32> {
        self.0.pop_back(list)
    }

    /// Takes the most recently used node off `list`.
    #[inline]
    pub fn pop_front(&mut self, list: u32) -> Option<u32> {
        self.0.pop_front(list)
    }

    /// The nodes of `list` from the front (most recently used) to the back; `rev()`
    /// walks from the back.
    #[inline]
    pub fn iter(&self, list: u32) -> Iter<'_> {
        self.0.iter(list)
    }

    /// Walks every list and checks its links, its ends, its length and its nodes' list
    /// ids, and that no node is marked on a list it is not linked in.
    pub fn check(&self) -> Result<(), String> {
        self.0.check()
    }
}

/// The nodes of one list, from the front (most recently used) to the back, or the
/// other way with `rev()`. Made by [`Lists::iter`] and [`Lru::iter`].
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    nodes: &'a [Node],
    front: u32,
    back: u32,
    left: u32,
}

impl Iterator for Iter<'_> {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        if self.left == 0 {
            return None;
        }
        let cur = self.front;
        self.front = self.nodes[cur as usize].older;
        self.left -= 1;
        Some(cur)
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<u32> {
        if self.left == 0 {
            return None;
        }
        let cur = self.back;
        self.back = self.nodes[cur as usize].newer;
        self.left -= 1;
        Some(cur)
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl FusedIterator for Iter<'_> {}

/// One LRU list over node ids `0..nodes`: [`Lists`] with a single list, without the
/// list argument. The front is the most recently used end, the back the least.
#[derive(Clone, Debug)]
pub struct Lru(Links<[Ends; 1]>);

impl Lru {
    /// An empty list over `nodes` nodes (below [`NIL`]).
    pub fn new(nodes: u32) -> Lru {
        Lru(Links::new(nodes, [EMPTY]))
    }

    /// Node ids are `0..nodes()`.
    #[inline]
    pub fn nodes(&self) -> u32 {
        self.0.nodes.len() as u32
    }

    /// Nodes on the list.
    #[inline]
    pub fn len(&self) -> u32 {
        self.0.ends[0].len
    }

    /// Whether the list has no node.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `node` is on the list.
    #[inline]
    pub fn contains(&self, node: u32) -> bool {
        self.0.list_of(node).is_some()
    }

    /// The most recently used node.
    #[inline]
    pub fn front(&self) -> Option<u32> {
        self.0.front(0)
    }

    /// The least recently used node.
    #[inline]
    pub fn back(&self) -> Option<u32> {
        self.0.back(0)
    }

    /// Fetches `node`'s links into the cache ahead of a change to them (a hint: no
    /// state changes; a node past the end is ignored).
    #[inline]
    pub fn prefetch(&self, node: u32) {
        if let Some(n) = self.0.nodes.get(node as usize) {
            crate::prefetch::read(n);
        }
    }

    /// The node after `node` towards the front (more recently used).
    #[inline]
    pub fn newer(&self, node: u32) -> Option<u32> {
        self.0.newer(node)
    }

    /// The node after `node` towards the back (less recently used).
    #[inline]
    pub fn older(&self, node: u32) -> Option<u32> {
        self.0.older(node)
    }

    /// Puts `node`, which must not be on the list, at the front.
    #[inline]
    pub fn push_front(&mut self, node: u32) {
        self.0.push_front(0, node);
    }

    /// Puts `node`, which must not be on the list, at the back.
    #[inline]
    pub fn push_back(&mut self, node: u32) {
        self.0.push_back(0, node);
    }

    /// A use of `node`: moves it to the front, inserting it if it is not on the list
    /// ([`Lists::move_to_front`]).
    #[inline]
    pub fn touch(&mut self, node: u32) {
        self.0.move_to_front(0, node);
    }

    /// Moves `node` to the back, inserting it if it is not on the list.
    #[inline]
    pub fn move_to_back(&mut self, node: u32) {
        self.0.move_to_back(0, node);
    }

    /// Takes `node` off the list; returns whether it was on it (no-op if not).
    #[inline]
    pub fn remove(&mut self, node: u32) -> bool {
        self.0.remove(node)
    }

    /// Takes the least recently used node off the list.
    #[inline]
    pub fn pop_back(&mut self) -> Option<u32> {
        self.0.pop_back(0)
    }

    /// The nodes from the most recently used to the least; `rev()` walks from the least.
    #[inline]
    pub fn iter(&self) -> Iter<'_> {
        self.0.iter(0)
    }

    /// Checks the links, the ends and the length ([`Lists::check`]).
    pub fn check(&self) -> Result<(), String> {
        self.0.check()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;
    use std::collections::VecDeque;

    /// Every list as a `VecDeque`, front first.
    fn model_of(l: &Lists) -> Vec<VecDeque<u32>> {
        (0..l.lists()).map(|i| l.iter(i).collect()).collect()
    }

    #[test]
    fn lists_keep_order_and_move_nodes_between_lists() {
        let mut l = Lists::new(6, 2);
        for n in 0..4 {
            l.push_front(0, n);
        }
        l.move_to_front(0, 1);
        l.move_to_back(1, 3);
        l.push_back(0, 5);
        assert_eq!(l.iter(0).collect::<Vec<_>>(), [1, 2, 0, 5]);
        assert_eq!(l.iter(0).rev().collect::<Vec<_>>(), [5, 0, 2, 1]);
        assert_eq!(l.iter(1).collect::<Vec<_>>(), [3]);
        assert_eq!((l.front(0), l.back(0)), (Some(1), Some(5)));
        assert_eq!((l.newer(0), l.older(0)), (Some(2), Some(5)));
        assert_eq!(l.list_of(3), Some(1));
        assert_eq!(l.list_of(4), None);
        assert!(l.remove(0));
        assert!(!l.remove(4), "a node on no list is ignored");
        assert_eq!(l.iter(0).collect::<Vec<_>>(), [1, 2, 5]);
        assert_eq!(l.len(0), 3);
        assert_eq!(l.pop_back(0), Some(5));
        assert_eq!(l.pop_front(0), Some(1));
        assert_eq!(l.pop_back(0), Some(2));
        assert_eq!(l.pop_back(0), None);
        assert!(l.is_empty(0));
        l.check().unwrap();
    }

    #[test]
    fn lru_orders_by_last_touch() {
        let mut l = Lru::new(4);
        assert_eq!(l.back(), None);
        l.touch(2);
        l.touch(0);
        l.touch(3);
        assert_eq!(l.back(), Some(2));
        l.touch(2);
        l.touch(2);
        assert_eq!((l.front(), l.back()), (Some(2), Some(0)));
        assert_eq!(l.iter().collect::<Vec<_>>(), [2, 3, 0]);
        assert_eq!(l.iter().rev().collect::<Vec<_>>(), [0, 3, 2]);
        assert_eq!(l.iter().len(), 3);
        assert!(l.remove(3));
        assert!(!l.contains(3));
        assert_eq!(l.pop_back(), Some(0));
        assert_eq!(l.len(), 1);
        l.move_to_back(1);
        assert_eq!(l.iter().collect::<Vec<_>>(), [2, 1]);
        l.check().unwrap();
        // A prefetch hint takes any node, past the end included, without a panic.
        for n in 0..8 {
            l.prefetch(n);
        }
        assert_eq!(l.iter().collect::<Vec<_>>(), [2, 1]);
        l.check().unwrap();
    }

    #[test]
    #[should_panic(expected = "already on list 0")]
    fn pushing_a_listed_node_panics() {
        let mut l = Lists::new(2, 2);
        l.push_front(0, 1);
        l.push_back(1, 1);
    }

    #[test]
    fn iteration_from_both_ends_meets_in_the_middle() {
        let mut l = Lru::new(5);
        for n in 0..5 {
            l.push_front(n);
        }
        let mut it = l.iter();
        assert_eq!((it.next(), it.next_back()), (Some(4), Some(0)));
        assert_eq!((it.next(), it.next_back()), (Some(3), Some(1)));
        assert_eq!(it.len(), 1);
        assert_eq!(
            (it.next(), it.next_back(), it.next()),
            (Some(2), None, None)
        );
    }

    /// Random operations on 3 lists over 40 nodes against a `VecDeque` per list.
    #[test]
    fn random_operations_match_a_vecdeque_model() {
        const NODES: u32 = 40;
        const LISTS: u32 = 3;
        let mut rng = SplitMix64::new(0x1157);
        let mut l = Lists::new(NODES, LISTS);
        let mut model: Vec<VecDeque<u32>> = vec![VecDeque::new(); LISTS as usize];
        let unlink = |model: &mut Vec<VecDeque<u32>>, node: u32| -> bool {
            for q in model.iter_mut() {
                if let Some(i) = q.iter().position(|&x| x == node) {
                    q.remove(i);
                    return true;
                }
            }
            false
        };
        for step in 0..200_000 {
            let node = rng.below(NODES as u64) as u32;
            let list = rng.below(LISTS as u64) as u32;
            let listed = l.contains(node);
            match rng.below(7) {
                0 if !listed => {
                    l.push_front(list, node);
                    model[list as usize].push_front(node);
                }
                1 if !listed => {
                    l.push_back(list, node);
                    model[list as usize].push_back(node);
                }
                0..=2 => {
                    l.move_to_front(list, node);
                    unlink(&mut model, node);
                    model[list as usize].push_front(node);
                }
                3 => {
                    l.move_to_back(list, node);
                    unlink(&mut model, node);
                    model[list as usize].push_back(node);
                }
                4 => assert_eq!(l.remove(node), unlink(&mut model, node)),
                5 => assert_eq!(l.pop_back(list), model[list as usize].pop_back()),
                _ => assert_eq!(l.pop_front(list), model[list as usize].pop_front()),
            }
            for (i, q) in model.iter().enumerate() {
                let i = i as u32;
                assert_eq!(l.len(i) as usize, q.len(), "step {step}");
                assert_eq!(l.front(i), q.front().copied(), "step {step}");
                assert_eq!(l.back(i), q.back().copied(), "step {step}");
            }
            let at = model
                .iter()
                .enumerate()
                .find_map(|(i, q)| q.iter().position(|&x| x == node).map(|p| (i as u32, p, q)));
            assert_eq!(l.list_of(node), at.map(|(i, _, _)| i), "step {step}");
            if let Some((_, p, q)) = at {
                let newer = p.checked_sub(1).map(|p| q[p]);
                assert_eq!(l.newer(node), newer, "step {step}");
                assert_eq!(l.older(node), q.get(p + 1).copied(), "step {step}");
            }
            if step % 97 == 0 {
                assert_eq!(model_of(&l), model, "step {step}");
                for i in 0..LISTS {
                    let back: Vec<u32> = l.iter(i).rev().collect();
                    let want: Vec<u32> = model[i as usize].iter().rev().copied().collect();
                    assert_eq!(back, want, "step {step}");
                }
                l.check().unwrap();
            }
        }
    }

    /// The single list against a `VecDeque`, with `touch` as an LRU cache uses it.
    #[test]
    fn lru_matches_a_vecdeque_model() {
        let mut rng = SplitMix64::new(7);
        let mut l = Lru::new(16);
        let mut model: VecDeque<u32> = VecDeque::new();
        for step in 0..50_000 {
            let node = rng.below(16) as u32;
            match rng.below(4) {
                0 | 1 => {
                    l.touch(node);
                    model.retain(|&x| x != node);
                    model.push_front(node);
                }
                2 => {
                    let had = model.contains(&node);
                    model.retain(|&x| x != node);
                    assert_eq!(l.remove(node), had, "step {step}");
                }
                _ => assert_eq!(l.pop_back(), model.pop_back(), "step {step}"),
            }
            assert_eq!(l.iter().collect::<VecDeque<_>>(), model, "step {step}");
            assert_eq!(l.len() as usize, model.len());
        }
        l.check().unwrap();
    }
}
