//! A connection closed with a TCP reset, for the fault modes that reset.

use std::os::fd::RawFd;

/// Makes the next close of `fd` send a TCP RST instead of a FIN.
pub(crate) fn reset_on_close(fd: RawFd) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: fd is an open socket owned by the connection that is being reset, and
    // the pointer and length describe a valid `linger` for the call's duration.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&raw const linger).cast(),
            size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}
