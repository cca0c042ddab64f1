//! A string value's allocation, from the sds header before its `RedisModule_StringDMA` buffer
//! (every supported server's): types 5, 8 and 16 (below 64 KiB) only.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allocation {
    /// A 1-byte header (strings below 32 bytes): allocated exactly, no room to grow in place.
    Exact,
    /// Header bytes and the usable capacity the header records.
    Capacity { header: usize, capacity: usize },
    /// Not a header this module reads, or inconsistent with `len`.
    Unknown,
}

/// Reads the sds header before `buf`, a string of `len` bytes. Safety: `buf` is the live
/// `RedisModule_StringDMA` buffer of a `len`-byte value (key open, unchanged).
pub unsafe fn allocation(buf: *const u8, len: usize) -> Allocation {
    // SAFETY: every sds header ends with a flags byte just before buf, and buf is an sds (caller).
    let flags = unsafe { *buf.sub(1) };
    match flags & 7 {
        // SDS_TYPE_5: the length is in the flags byte; no capacity field, nothing to spare.
        0 if usize::from(flags >> 3) == len => Allocation::Exact,
        // SDS_TYPE_8: { u8 len; u8 alloc; u8 flags }.
        1 => {
            // SAFETY: a type-8 header is 3 bytes, all before buf.
            let (stored_len, alloc) = unsafe { (*buf.sub(3), *buf.sub(2)) };
            checked(usize::from(stored_len), usize::from(alloc), 3, len)
        }
        // SDS_TYPE_16: { u16 len; u16 alloc; u8 flags }, packed.
        2 => {
            // SAFETY: a type-16 header is 5 bytes, all before buf; packed, hence unaligned reads.
            let read = |back: usize| unsafe { buf.sub(back).cast::<u16>().read_unaligned() };
            checked(usize::from(read(5)), usize::from(read(3)), 5, len)
        }
        _ => Allocation::Unknown,
    }
}

fn checked(stored_len: usize, capacity: usize, header: usize, len: usize) -> Allocation {
    if stored_len == len && capacity >= len {
        Allocation::Capacity { header, capacity }
    } else {
        Allocation::Unknown
    }
}
