//! A connection's own streams: vload's control stream (its SETTINGS, kept open as RFC 9114
//! asks), and the server's unidirectional streams, read by one task a connection: its
//! control stream (SETTINGS first, then GOAWAY ends new requests), its QPACK streams
//! drained (vload allows no dynamic table, so they carry nothing vload needs), any other
//! kind refused.

use std::cell::Cell;
use std::rc::Rc;

use quinn::{Connection, RecvStream, SendStream, VarInt, WriteError};

use super::frames::{GOAWAY, ReadFail, Reader, SETTINGS};

const CONTROL: u64 = 0x00;
const QPACK_ENCODER: u64 = 0x02;
const QPACK_DECODER: u64 = 0x03;
const H3_STREAM_CREATION_ERROR: u32 = 0x103;
const H3_MISSING_SETTINGS: u32 = 0x10a;

/// Opens vload's control stream: its type and an empty SETTINGS (every default holds: no
/// dynamic table, no limit on field sections vload states).
pub(super) async fn open(conn: &Connection) -> Result<SendStream, WriteError> {
    let mut control = conn.open_uni().await.map_err(WriteError::ConnectionLost)?;
    control
        .write_all(&[CONTROL as u8, SETTINGS as u8, 0])
        .await?;
    Ok(control)
}

/// Reads the server's streams until the connection ends; `gone` is set on GOAWAY and when
/// the connection has closed.
pub(super) async fn serve(conn: Connection, gone: Rc<Cell<bool>>) {
    loop {
        match conn.accept_uni().await {
            Ok(recv) => {
                tokio::task::spawn_local(stream(conn.clone(), recv, gone.clone()));
            }
            Err(_) => {
                gone.set(true);
                return;
            }
        }
    }
}

async fn stream(conn: Connection, mut recv: RecvStream, gone: Rc<Cell<bool>>) {
    let mut reader = Reader::new(&mut recv);
    let kind = match reader.varint().await {
        Ok(Some(kind)) => kind,
        _ => return,
    };
    match kind {
        CONTROL => control(&conn, &mut reader, &gone).await,
        QPACK_ENCODER | QPACK_DECODER => reader.drain().await,
        // Push streams (vload allows none) and extensions it does not speak.
        _ => {
            let _ = reader.recv.stop(VarInt::from_u32(H3_STREAM_CREATION_ERROR));
        }
    }
}

/// The server's control stream: SETTINGS first, then GOAWAY (and anything else passed over).
async fn control(conn: &Connection, reader: &mut Reader<'_>, gone: &Cell<bool>) {
    let mut first = true;
    loop {
        let (kind, len) = match reader.frame().await {
            Ok(Some(frame)) => frame,
            // The connection's end says why (a control stream that ends is the server's
            // error, which its close carries).
            Ok(None) | Err(ReadFail::Quic(_)) | Err(ReadFail::Protocol(..)) => return,
        };
        if first && kind != SETTINGS {
            conn.close(
                VarInt::from_u32(H3_MISSING_SETTINGS),
                b"the control stream did not begin with SETTINGS",
            );
            return;
        }
        first = false;
        if kind == GOAWAY {
            gone.set(true);
        }
        if reader.skip(len, |_| ()).await.is_err() {
            return;
        }
    }
}
