//! Peer credentials of a Unix-socket connection (SO_PEERCRED).

use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;

/// The uid of the process at the other end of `s`.
pub fn peer_uid(s: &UnixStream) -> io::Result<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes of the sizes given.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(cred.uid)
}

/// Ok if the peer runs as this process's effective uid.
pub fn check_same_user(s: &UnixStream) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    match peer_uid(s) {
        Ok(uid) if uid == me => Ok(()),
        Ok(uid) => Err(format!(
            "peer uid {uid} is not the server's uid {me}: only the server's user may connect"
        )),
        Err(e) => Err(format!("cannot read the peer's credentials: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_pair_is_our_own_user() {
        let (a, _b) = UnixStream::pair().unwrap();
        assert_eq!(peer_uid(&a).unwrap(), unsafe { libc::geteuid() });
        assert!(check_same_user(&a).is_ok());
    }
}
