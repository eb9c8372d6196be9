//! Where `InMemorySaver` keeps its bytes: regions of its own, filled front to back.
//!
//! Why: an in-memory saver only grows, so every byte it keeps lands on a page the process
//! never touched, and the first touch of a page is a fault (the kernel zeroes and charges it;
//! in a VM the host may have to back it too). Measured here, fresh memory costs ~0.8 ms a MiB,
//! and on `fanout_to_subgraph` with `async` that was a quarter of a run when the saver's bytes
//! were heap allocations. Regions let the saver touch its next pages before it needs them:
//! once the open 2 MiB region is half full, the next one is mapped on a thread of its own, at
//! idle priority, with its pages already faulted in, so a run inside a runtime does not wait
//! for the kernel;
//! a run that fills the open region before the next one is ready waits for it (the other
//! thread has done part of the work) rather than faulting a fresh one itself. On Linux the
//! kernel faults the pages in as it maps them (`MAP_POPULATE`): 0.35 ms a MiB here against
//! 0.52 ms touching them one by one, and a `fanout_to_subgraph_10x` run with `async` takes a
//! third of the page faults it took. (Huge pages were tried: with the kernel's THP `madvise`
//! mode a 2 MiB region took 8 ms to fault, compaction included, against 1.6 ms in 4 KiB
//! pages.)
//!
//! Small savers stay small: regions start at 64 KiB and double up to 2 MiB as the saver grows.
//! A region is returned to the system when nothing in it is kept any more (deleted threads,
//! pruned checkpoints); the open region is reused from its start instead.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// A byte range kept in the arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Span {
    region: usize,
    start: usize,
    len: usize,
}

impl Span {
    /// How many bytes it holds.
    pub(super) fn len(&self) -> usize {
        self.len
    }
}

/// Regions, and the one being filled.
#[derive(Default)]
pub(super) struct Arena {
    regions: Vec<Option<Region>>,
    open: Option<usize>,
    /// Bytes of all regions mapped so far: the next region's size grows with it.
    mapped: usize,
    /// The largest value kept in the open region: the next region is prepared in time for
    /// two more of them.
    largest: usize,
    /// The next region, when one is being prepared (or is ready) off the caller's thread.
    spare: Option<Spare>,
}

/// A region being prepared off the caller's thread: its size, and where it lands when ready.
struct Spare {
    size: usize,
    slot: Arc<(Mutex<Option<Region>>, Condvar)>,
}

/// Lowers the calling thread to the scheduler's idle class (Linux's `SCHED_IDLE`): it runs
/// only on a core nothing else wants. Why: zeroing a region's pages is most of a cost the
/// saver pays per byte kept (~0.35-1 ms a MiB here, and the kernel does it on whatever thread
/// asks), and at normal priority the preparing thread takes its share of the cores from the
/// runs it prepares for. At idle priority it fills the gaps between their steps; a run that
/// catches up with it waits, and its idle core goes to the preparing thread.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn idle_priority() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: a system call on the calling thread (pid 0) with a valid parameter; its result
    // is only a hint's (a failure leaves the normal priority).
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_IDLE, &param);
    }
}

#[cfg(not(target_os = "linux"))]
fn idle_priority() {}

/// How long a run waits for a region being prepared before mapping one itself. Preparing one
/// takes about a millisecond when the thread gets a core; at idle priority on a machine whose
/// cores other work keeps busy it may get none, and then a run loses at most this much once
/// per region (the one being prepared is kept for the next).
const SPARE_WAIT: Duration = Duration::from_millis(20);

struct Region {
    memory: Memory,
    used: usize,
    /// Bytes of it still kept.
    live: usize,
}

enum Memory {
    Mapped(memmap2::MmapMut),
    /// Where mapping fails (or is not worth a map): a heap buffer.
    Heap(Box<[u8]>),
}

impl Memory {
    fn bytes(&self) -> &[u8] {
        match self {
            Memory::Mapped(map) => map,
            Memory::Heap(heap) => heap,
        }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        match self {
            Memory::Mapped(map) => map,
            Memory::Heap(heap) => heap,
        }
    }
}

/// The largest region size a growing saver maps (and the size prepared ahead).
const FULL: usize = 2 << 20;
/// The first region's size.
const FIRST: usize = 64 << 10;

impl Region {
    fn new(size: usize) -> Region {
        Region::mapped(size, false)
    }

    /// `populate`: the kernel faults every page in while mapping (Linux), cheaper than
    /// touching them one by one.
    fn mapped(size: usize, populate: bool) -> Region {
        let memory = if size >= FULL {
            let mut options = memmap2::MmapOptions::new();
            if populate {
                options.populate();
            }
            match options.len(size).map_anon() {
                Ok(map) => Memory::Mapped(map),
                Err(_) => Memory::Heap(vec![0; size].into_boxed_slice()),
            }
        } else {
            Memory::Heap(vec![0; size].into_boxed_slice())
        };
        Region {
            memory,
            used: 0,
            live: 0,
        }
    }

    /// A region with every page already faulted in.
    fn touched(size: usize) -> Region {
        let mut region = Region::mapped(size, true);
        if matches!(region.memory, Memory::Heap(_)) || !cfg!(target_os = "linux") {
            for page in region.memory.bytes_mut().chunks_mut(4096) {
                page[0] = 0;
            }
        }
        region
    }

    fn size(&self) -> usize {
        self.memory.bytes().len()
    }

    fn room(&self) -> usize {
        self.size() - self.used
    }
}

impl Arena {
    /// Copies `bytes` in.
    pub(super) fn keep(&mut self, bytes: &[u8]) -> Span {
        let len = bytes.len();
        if len == 0 {
            return Span {
                region: usize::MAX,
                start: 0,
                len: 0,
            };
        }
        let open = self
            .open
            .filter(|&i| self.regions[i].as_ref().is_some_and(|r| r.room() >= len));
        let index = match open {
            Some(index) => index,
            None => self.region_for(len),
        };
        let Some(region) = self.regions[index].as_mut() else {
            unreachable!("the region was just found or added")
        };
        let start = region.used;
        region.memory.bytes_mut()[start..start + len].copy_from_slice(bytes);
        region.used += len;
        region.live += len;
        if Some(index) == self.open {
            self.largest = self.largest.max(len);
            let room = region.room();
            if self.spare.is_none()
                && region.size() >= FULL
                && (room < region.size() / 2 || room < 4 * self.largest)
            {
                self.prepare_spare();
            }
        }
        Span {
            region: index,
            start,
            len,
        }
    }

    /// A region with room for `len` bytes: a new open region, or one of its own for a value
    /// that is large for a saver still growing.
    fn region_for(&mut self, len: usize) -> usize {
        // The size a growing saver's regions have reached.
        let grown = self.mapped.clamp(FIRST, FULL);
        if grown < FULL && len > grown / 4 {
            return self.add(Region::new(len));
        }
        let region = match self.take_spare(len) {
            Some(spare) => spare,
            None => Region::new(grown.max(len.next_multiple_of(FULL.min(grown)))),
        };
        let index = self.add(region);
        self.largest = 0;
        // The old open region is left to its kept bytes, unmapped once they go.
        if let Some(old) = self.open.replace(index) {
            self.drop_if_unused(old);
        }
        index
    }

    /// The bytes `span` holds.
    pub(super) fn get(&self, span: Span) -> &[u8] {
        if span.len == 0 {
            return &[];
        }
        match self.regions.get(span.region).and_then(Option::as_ref) {
            Some(region) => &region.memory.bytes()[span.start..span.start + span.len],
            None => &[],
        }
    }

    /// Forgets `span`: its region goes back to the system when nothing else in it is kept.
    pub(super) fn release(&mut self, span: Span) {
        if span.len == 0 {
            return;
        }
        if let Some(region) = self.regions.get_mut(span.region).and_then(Option::as_mut) {
            region.live = region.live.saturating_sub(span.len);
            self.drop_if_unused(span.region);
        }
    }

    /// Bytes kept now, over all regions.
    #[cfg(test)]
    pub(super) fn live(&self) -> usize {
        self.regions.iter().flatten().map(|r| r.live).sum()
    }

    /// Bytes mapped for regions now.
    #[cfg(test)]
    fn mapped_now(&self) -> usize {
        self.regions
            .iter()
            .flatten()
            .map(|r| r.memory.bytes().len())
            .sum()
    }

    /// Starts preparing the next region on a thread of its own, with room for four of the
    /// largest values lately kept (outside a runtime, the next region is mapped when it is
    /// needed).
    fn prepare_spare(&mut self) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let size = FULL.max((4 * self.largest).next_multiple_of(FULL));
        let slot = Arc::new((Mutex::new(None), Condvar::new()));
        let filled = slot.clone();
        let prepare = move || {
            idle_priority();
            let region = Region::touched(size);
            let (lock, ready) = &*filled;
            *lock.lock().unwrap_or_else(|p| p.into_inner()) = Some(region);
            ready.notify_all();
        };
        // A thread of its own (its priority is lowered for good); where none can be started,
        // the next region is mapped when it is needed.
        let started = std::thread::Builder::new()
            .name("agentgraph-arena".to_owned())
            .spawn(prepare);
        if started.is_ok() {
            self.spare = Some(Spare { size, slot });
        }
    }

    /// The prepared region when it has room for `len` bytes, waited for if it is still being
    /// prepared (one too small is dropped: the next is prepared for the sizes kept by then).
    /// One not ready within [`SPARE_WAIT`] stays the spare, for the next region needed.
    fn take_spare(&mut self, len: usize) -> Option<Region> {
        let spare = self.spare.take()?;
        if spare.size < len {
            return None;
        }
        let region = {
            let (lock, ready) = &*spare.slot;
            let guard = lock.lock().unwrap_or_else(|p| p.into_inner());
            let (mut guard, _) = ready
                .wait_timeout_while(guard, SPARE_WAIT, |region| region.is_none())
                .unwrap_or_else(|p| p.into_inner());
            guard.take()
        };
        if region.is_none() {
            self.spare = Some(spare);
        }
        region
    }

    fn add(&mut self, region: Region) -> usize {
        self.mapped += region.memory.bytes().len();
        match self.regions.iter().position(Option::is_none) {
            Some(free) => {
                self.regions[free] = Some(region);
                free
            }
            None => {
                self.regions.push(Some(region));
                self.regions.len() - 1
            }
        }
    }

    fn drop_if_unused(&mut self, index: usize) {
        let Some(region) = self.regions[index].as_mut() else {
            return;
        };
        if region.live > 0 {
            return;
        }
        if self.open == Some(index) {
            // Its pages are warm: fill it again from the start.
            region.used = 0;
        } else {
            self.regions[index] = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_bytes_read_back_across_regions_of_growing_size() {
        let mut arena = Arena::default();
        let values: Vec<Vec<u8>> = (0..400u32)
            .map(|i| vec![(i % 251) as u8; (i as usize * 97) % 20_000])
            .collect();
        let spans: Vec<Span> = values.iter().map(|v| arena.keep(v)).collect();
        for (value, span) in values.iter().zip(&spans) {
            assert_eq!(arena.get(*span), &value[..]);
        }
        // Regions grew to the full size instead of staying at the first size.
        assert!(
            arena
                .regions
                .iter()
                .flatten()
                .any(|r| r.memory.bytes().len() == FULL)
        );
    }

    #[test]
    fn a_value_larger_than_a_region_gets_one_of_its_own_and_the_open_one_stays() {
        let mut arena = Arena::default();
        let small = arena.keep(b"small");
        let big = vec![9u8; FULL + 1];
        let span = arena.keep(&big);
        assert_eq!(arena.get(span), &big[..]);
        let next = arena.keep(b"next");
        assert_eq!(
            next.region, small.region,
            "small values keep filling the open region"
        );
        assert_eq!(arena.get(small), b"small");
        assert_eq!(arena.get(next), b"next");
    }

    #[test]
    fn released_regions_are_unmapped_and_the_open_one_is_reused() {
        let mut arena = Arena::default();
        let spans: Vec<Span> = (0..2_000).map(|_| arena.keep(&[1u8; 4096])).collect();
        let before = arena.mapped_now();
        assert!(before >= 2_000 * 4096);
        for span in &spans {
            arena.release(*span);
        }
        // Only the open region is left, emptied.
        assert!(
            arena.mapped_now() <= FULL,
            "{} bytes still mapped",
            arena.mapped_now()
        );
        let again = arena.keep(b"again");
        assert_eq!(
            again.start, 0,
            "the open region is filled from its start again"
        );
        assert_eq!(arena.get(again), b"again");
        assert_eq!(
            arena.get(Span {
                region: usize::MAX,
                start: 0,
                len: 0
            }),
            b""
        );
    }

    /// Waits until the region being prepared is ready; returns its slot.
    async fn ready_spare(arena: &Arena) -> Arc<(Mutex<Option<Region>>, Condvar)> {
        let slot = arena
            .spare
            .as_ref()
            .expect("a spare is being prepared")
            .slot
            .clone();
        while slot.0.lock().unwrap().is_none() {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        slot
    }

    #[tokio::test]
    async fn the_next_region_is_prepared_off_the_thread_and_taken_when_the_open_one_fills() {
        let mut arena = Arena::default();
        let mut kept = Vec::new();
        while arena.mapped < 3 * FULL || arena.spare.is_none() {
            kept.push(arena.keep(&[3u8; 8192]));
        }
        let slot = ready_spare(&arena).await;
        let open = arena.open;
        while arena.open == open {
            kept.push(arena.keep(&[4u8; 8192]));
        }
        assert!(
            slot.0.lock().unwrap().is_none(),
            "the prepared region became the open one"
        );
        assert_eq!(arena.get(*kept.last().unwrap()), &[4u8; 8192][..]);
        assert_eq!(arena.get(kept[0]), &[3u8; 8192][..]);
    }

    /// Makes `arena`'s spare one this test prepares by hand, `size` bytes, delivered after
    /// `after` (or never): its slot.
    fn spare_by_hand(
        arena: &mut Arena,
        size: usize,
        after: Option<std::time::Duration>,
    ) -> Arc<(Mutex<Option<Region>>, Condvar)> {
        let slot = Arc::new((Mutex::new(None), Condvar::new()));
        arena.spare = Some(Spare {
            size,
            slot: slot.clone(),
        });
        if let Some(after) = after {
            // Made here: the other thread only delivers it (a loaded machine's page faults
            // do not count against the wait).
            let region = Region::touched(size);
            let filled = slot.clone();
            std::thread::spawn(move || {
                std::thread::sleep(after);
                *filled.0.lock().unwrap() = Some(region);
                filled.1.notify_all();
            });
        }
        slot
    }

    /// An arena grown to three full regions (outside a runtime: no spare prepared), and what
    /// it kept.
    fn grown() -> (Arena, Vec<Span>) {
        let mut arena = Arena::default();
        let mut kept = Vec::new();
        while arena.mapped < 3 * FULL {
            kept.push(arena.keep(&[6u8; 8192]));
        }
        (arena, kept)
    }

    /// Keeps values until the open region changes.
    fn until_next_region(arena: &mut Arena, kept: &mut Vec<Span>) {
        let open = arena.open;
        while arena.open == open {
            kept.push(arena.keep(&[7u8; 8192]));
        }
    }

    #[test]
    fn a_region_still_being_prepared_is_waited_for_not_replaced() {
        let (mut arena, mut kept) = grown();
        // A spare of a size no region of its own would have, ready a little later.
        let slot = spare_by_hand(&mut arena, 3 * FULL, Some(SPARE_WAIT / 10));
        until_next_region(&mut arena, &mut kept);
        let now_open = arena.regions[arena.open.unwrap()].as_ref().unwrap();
        assert_eq!(
            now_open.size(),
            3 * FULL,
            "the prepared region is the open one"
        );
        assert!(slot.0.lock().unwrap().is_none());
        assert_eq!(arena.get(*kept.last().unwrap()), &[7u8; 8192][..]);
    }

    #[test]
    fn a_region_not_ready_in_time_is_kept_for_the_next_one() {
        let (mut arena, mut kept) = grown();
        // Never delivered: the run maps a region of its own after the wait.
        let slot = spare_by_hand(&mut arena, 3 * FULL, None);
        until_next_region(&mut arena, &mut kept);
        let now_open = arena.regions[arena.open.unwrap()].as_ref().unwrap();
        assert_eq!(now_open.size(), FULL, "a region mapped on the spot");
        let spare = arena
            .spare
            .as_ref()
            .expect("the one being prepared is still the spare");
        assert!(Arc::ptr_eq(&spare.slot, &slot));
        assert_eq!(arena.get(*kept.last().unwrap()), &[7u8; 8192][..]);
    }

    #[tokio::test]
    async fn regions_are_prepared_for_four_of_the_largest_values_lately_kept() {
        let mut arena = Arena::default();
        let big = vec![5u8; FULL + FULL / 2];
        let mut kept = Vec::new();
        while arena.spare.is_none() {
            kept.push(arena.keep(&big));
        }
        ready_spare(&arena).await;
        let open = arena.open;
        kept.push(arena.keep(&big));
        kept.push(arena.keep(&big));
        let region = arena.regions[arena.open.unwrap()].as_ref().unwrap();
        assert_ne!(arena.open, open);
        assert!(region.size() >= 4 * big.len(), "{} bytes", region.size());
        assert!(kept.iter().all(|span| arena.get(*span) == &big[..]));
    }
}
