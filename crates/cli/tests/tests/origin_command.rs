use std::io::{BufRead as _, BufReader};
use std::process::Stdio;

use super::util::*;

#[test]
fn vload_origin_serves_until_sigterm() {
    let mut child = vload()
        .args(["origin", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{line}");
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    use std::io::{Read as _, Write as _};
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.ends_with("Hello World"), "{response}");
    signal(&child, libc::SIGTERM);
    assert!(child.wait().unwrap().success());
}

#[test]
fn bad_origin_flags_are_refused() {
    let o = run(
        vload().args(["origin", "--stall-every", "1s", "--stall-for", "2s"]),
        2,
    );
    assert!(stderr(&o).contains("shorter than"), "{}", stderr(&o));
}
