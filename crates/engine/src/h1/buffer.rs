//! A connection's read buffer: its size, and how it makes room and grows.

/// The read buffer's starting size, enough for the head of a cache's usual small response:
/// every connection pays it (10,000 connections: 10 MB at 1 KB, 40 MB at 4 KB), and a
/// read that fills it doubles it.
pub(crate) const BUFFER: usize = 1024;
/// A read that fills the buffer doubles it, up to this, so large bodies take few reads.
const MAX_BUFFER: usize = 64 * 1024;

/// Makes room at the end of `buf[start..end]` for a read (moving or doubling); returns the
/// room.
pub(crate) fn make_room(buf: &mut Vec<u8>, start: &mut usize, end: &mut usize) -> usize {
    if *start == *end {
        (*start, *end) = (0, 0);
    } else if *end == buf.len() {
        if *start > 0 {
            buf.copy_within(*start..*end, 0);
            *end -= *start;
            *start = 0;
        } else {
            let grown = buf.len() * 2;
            buf.resize(grown, 0);
        }
    }
    buf.len() - *end
}

/// A read of `n` bytes that filled all the `room` there was doubles the buffer, up to
/// [`MAX_BUFFER`], so large bodies take few reads.
pub(crate) fn grow_if_filled(buf: &mut Vec<u8>, n: usize, room: usize) {
    if n == room && buf.len() < MAX_BUFFER {
        let grown = (buf.len() * 2).min(MAX_BUFFER);
        buf.resize(grown, 0);
    }
}
