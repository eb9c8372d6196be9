//! Encoding buffers kept by each thread from one checkpoint to the next, across runs.
//!
//! Why: a field encoded whole with no cached version before it (the first checkpoint that
//! writes it in a run, e.g. a fan-in's results landing in the run's last checkpoint) used to
//! get a fresh vector that grew by doubling, and its bytes, handed to the saver, were freed
//! once stored. The heap reuses the freed space for what savers keep (ids, map entries), so
//! the next run's buffer of the same size came from pages never touched, and the first touch
//! of a page is a fault (in a VM the host may have to back it too). Measured on
//! `fanout_to_subgraph_10x` with the in-memory saver: a twentieth of the run's CPU, all of it
//! on the run's last checkpoint, while the run waits for it. Here a thread keeps a few
//! emptied buffers: encodings take one, and a saver that stores on the run's thread (the
//! in-memory one, SQLite's small batches) gives a blob's bytes back once it has stored them.

use std::cell::RefCell;

/// Buffers a thread keeps at most.
const KEPT: usize = 4;
/// Buffers larger than this are not kept (a huge field would stay resident per thread).
const LARGEST: usize = 256 << 10;
/// Nor smaller ones: the allocator's own free lists serve those from warm memory.
const SMALLEST: usize = 4 << 10;

thread_local! {
    static KEPT_BUFFERS: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// An empty buffer with room for `len` bytes: the smallest kept one that has it, else the
/// largest kept (it grows from there), else a new one. `len` 0 is a size not known: the
/// largest kept. Small buffers come from the allocator.
pub(crate) fn buffer(len: usize) -> Vec<u8> {
    if (1..SMALLEST).contains(&len) {
        return Vec::with_capacity(len);
    }
    let kept = KEPT_BUFFERS
        .try_with(|kept| {
            let mut kept = kept.try_borrow_mut().ok()?;
            let fits = kept
                .iter()
                .enumerate()
                .filter(|(_, b)| len > 0 && b.capacity() >= len)
                .min_by_key(|(_, b)| b.capacity())
                .map(|(i, _)| i);
            let at = fits.or_else(|| {
                kept.iter()
                    .enumerate()
                    .max_by_key(|(_, b)| b.capacity())
                    .map(|(i, _)| i)
            })?;
            Some(kept.swap_remove(at))
        })
        .ok()
        .flatten();
    let mut bytes = kept.unwrap_or_default();
    bytes.reserve(len);
    bytes
}

/// Keeps `bytes`' allocation for a later [`buffer`] on this thread, when its size is worth
/// keeping (replacing the smallest kept one when all places are taken).
pub(crate) fn give_back(mut bytes: Vec<u8>) {
    let capacity = bytes.capacity();
    if !(SMALLEST..=LARGEST).contains(&capacity) {
        return;
    }
    bytes.clear();
    let _ = KEPT_BUFFERS.try_with(|kept| {
        let Ok(mut kept) = kept.try_borrow_mut() else {
            return;
        };
        if kept.len() < KEPT {
            kept.push(bytes);
            return;
        }
        if let Some((at, smallest)) = kept
            .iter_mut()
            .enumerate()
            .min_by_key(|(_, b)| b.capacity())
            && smallest.capacity() < capacity
        {
            kept[at] = bytes;
        }
    });
}

/// Keeps the blobs' buffers of checkpoints a saver has stored (see [`give_back`]).
pub(crate) fn give_back_blobs(ops: impl IntoIterator<Item = super::StoreOp>) {
    for op in ops {
        if let super::StoreOp::Checkpoint { blobs, .. } = op {
            blobs.into_iter().for_each(|blob| give_back(blob.data));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_given_back_is_reused_and_sizes_outside_the_range_are_not_kept() {
        let mut bytes = buffer(50_000);
        bytes.extend_from_slice(&[7; 50_000]);
        let at = bytes.as_ptr();
        give_back(bytes);
        let again = buffer(10_000);
        assert_eq!(again.as_ptr(), at, "the kept allocation comes back");
        assert!(again.is_empty() && again.capacity() >= 50_000);

        give_back(Vec::with_capacity(LARGEST + 1));
        give_back(Vec::with_capacity(16));
        assert!(KEPT_BUFFERS.with(|k| k.borrow().is_empty()));
    }

    #[test]
    fn the_smallest_buffer_that_fits_is_taken_and_the_smallest_kept_is_replaced() {
        for size in [8 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10] {
            give_back(Vec::with_capacity(size));
        }
        let sizes = |k: &RefCell<Vec<Vec<u8>>>| {
            let mut s: Vec<usize> = k.borrow().iter().map(Vec::capacity).collect();
            s.sort_unstable();
            s
        };
        // Four places: the 8 KiB one made way for the 128 KiB one.
        let kept = KEPT_BUFFERS.with(sizes);
        assert_eq!(kept.len(), KEPT);
        assert!(kept[0] >= 16 << 10 && kept[0] < 32 << 10, "{kept:?}");
        assert!(buffer(20 << 10).capacity() < 64 << 10);
        assert!(buffer(1 << 20).capacity() >= 1 << 20);
    }
}
