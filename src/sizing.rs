//! Whether a string's allocation is no bigger than the one SET would make, by jemalloc's size
//! classes (without jemalloc nothing is written in place).

use crate::ffi::Allocation;

/// The usable size jemalloc gives `size` bytes (default build: 8-byte tiny class, 16-byte quantum
/// up to 128, then four classes per doubling).
pub fn jemalloc_class(size: usize) -> usize {
    match size {
        0..=8 => 8,
        9..=128 => (size + 15) & !15,
        _ => {
            // A power of two: rounding up is a mask, not a division.
            let spacing = size.next_power_of_two() / 8;
            (size + spacing - 1) & !(spacing - 1)
        }
    }
}

/// The sds header a fresh string of `len` bytes gets.
fn header_for(len: usize) -> usize {
    match len {
        0..=31 => 1,
        32..=255 => 3,
        256..=65_535 => 5,
        _ => 9,
    }
}

/// Whether the buffer `allocation` describes, holding `len` bytes, takes no more than a fresh one.
pub fn as_compact_as_fresh(allocation: Allocation, len: usize) -> bool {
    match allocation {
        Allocation::Exact => true,
        Allocation::Capacity { header, capacity } => {
            let (held, fresh) = (header + capacity + 1, header_for(len) + len + 1);
            // A class holds its own size: a buffer no bigger than the fresh one's needs no class.
            held <= fresh || jemalloc_class(held) <= jemalloc_class(fresh)
        }
        Allocation::Unknown => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jemalloc_size_classes() {
        let classes = [
            (1, 8),
            (8, 8),
            (9, 16),
            (36, 48),
            (128, 128),
            (129, 160),
            (256, 256),
            (257, 320),
            (1006, 1024),
            (4100, 5120),
            (16_385, 20_480),
        ];
        for (size, class) in classes {
            assert_eq!(jemalloc_class(size), class, "{size}");
        }
    }

    #[test]
    fn fresh_and_appended_strings() {
        // As createRawStringObject leaves a 40-byte value: a 3-byte header,
        // capacity = usable size - header - 1.
        let fresh = Allocation::Capacity {
            header: 3,
            capacity: jemalloc_class(3 + 40 + 1) - 3 - 1,
        };
        assert!(as_compact_as_fresh(fresh, 40));
        // APPEND doubles the capacity it asks for.
        let appended = Allocation::Capacity {
            header: 3,
            capacity: 80,
        };
        assert!(!as_compact_as_fresh(appended, 40));
        // 5,000 bytes grown by APPEND (the hazard that was reported).
        let appended = Allocation::Capacity {
            header: 5,
            capacity: 10_000,
        };
        assert!(!as_compact_as_fresh(appended, 5000));
        assert!(as_compact_as_fresh(Allocation::Exact, 20));
        assert!(!as_compact_as_fresh(Allocation::Unknown, 20));
    }
}
