//! How much memory a key's string value holds, read from the header of the
//! buffer `RedisModule_StringDMA` returns.
//!
//! The module API gives a string's length but not its allocation, and an
//! in-place write keeps whatever allocation the old value had: after APPEND
//! that can be twice the length. SET never keeps such spare room (its value
//! is a new, exactly sized object), so before writing in place the module
//! checks the allocation. The buffer is an sds string in every server this
//! module supports (Redis 3.2 to 8.x, Valkey): its header sits right before
//! the bytes, ending with a flags byte whose low 3 bits give the header type.
//! Only the two types a value below 64 KiB can have are read (plus the
//! 1-byte type, which has no spare room), and only when the length stored in
//! the header equals the length the module API reported; anything else is
//! "unknown", and the caller lets the server's own MSET write the key.

use libc::c_char;

/// What an sds header says about its allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allocation {
    /// A 1-byte header (strings below 32 bytes): allocated exactly, with no
    /// room to grow in place.
    Exact,
    /// Header bytes and the usable capacity the header records.
    Capacity { header: usize, capacity: usize },
    /// Not a header this module reads, or inconsistent with `len`.
    Unknown,
}

/// Reads the sds header before `buf`, a string of `len` bytes.
///
/// # Safety
///
/// `buf` must be the pointer `RedisModule_StringDMA` returned for a string
/// value of `len` bytes, still live (the key open, the value unchanged).
pub unsafe fn allocation(buf: *const c_char, len: usize) -> Allocation {
    let buf = buf.cast::<u8>();
    // SAFETY: every sds header, whatever its type, ends with one flags byte
    // immediately before the buffer; the caller guarantees buf is an sds.
    let flags = unsafe { *buf.sub(1) };
    match flags & 7 {
        // SDS_TYPE_5: the length lives in the flags byte, there is no
        // capacity field and nothing to spare.
        0 if usize::from(flags >> 3) == len => Allocation::Exact,
        // SDS_TYPE_8: { u8 len; u8 alloc; u8 flags }.
        1 => {
            // SAFETY: a type-8 header is 3 bytes, all before buf.
            let (stored_len, alloc) = unsafe { (*buf.sub(3), *buf.sub(2)) };
            checked(usize::from(stored_len), usize::from(alloc), 3, len)
        }
        // SDS_TYPE_16: { u16 len; u16 alloc; u8 flags }, packed.
        2 => {
            // SAFETY: a type-16 header is 5 bytes, all before buf; the
            // fields are packed, hence the unaligned reads.
            let (stored_len, alloc) = unsafe {
                (
                    buf.sub(5).cast::<u16>().read_unaligned(),
                    buf.sub(3).cast::<u16>().read_unaligned(),
                )
            };
            checked(usize::from(stored_len), usize::from(alloc), 5, len)
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
