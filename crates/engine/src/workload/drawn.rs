//! A request drawn for a connection to send: its groups, and what goes out ([`Form`]).

use bytes::Bytes;
use http::uri::Authority;

use crate::breakdown::Tags;
use crate::targets::Target;

/// A request drawn for a connection to send.
#[derive(Debug)]
pub(crate) struct Drawn {
    /// Its groups in the breakdowns by target.
    pub(crate) tags: Tags,
    /// What goes out.
    pub(crate) form: Form,
    /// A catalogue object the plan watches ([`crate::AttackPlan::watched_objects`]).
    pub(crate) watched: bool,
    /// The catalogue object drawn, if it is one.
    pub(crate) object: Option<u64>,
}

impl Drawn {
    /// The bytes the lean HTTP/1.1 client writes: `None` for the attack's own request.
    ///
    /// # Panics
    /// For a target drawn for another client: a workload for the lean HTTP/1.1 client draws
    /// bytes.
    pub(crate) fn into_wire(self) -> Option<Wire> {
        match self.form {
            Form::Own => None,
            Form::Wire { wire, .. } => Some(wire),
            Form::Target(_) => panic!("the lean HTTP/1.1 client's workload draws bytes"),
        }
    }
}

/// What a drawn request sends.
#[derive(Debug)]
pub(crate) enum Form {
    /// The attack's own request.
    Own,
    /// The whole request as the lean HTTP/1.1 client writes it, and the host of the
    /// target's absolute URL, if it had one (TLS sends it as the server name).
    Wire {
        wire: Wire,
        authority: Option<Authority>,
    },
    /// A target over the attack's request, for the clients that build their own (boxed: a
    /// lane's task holds its request while it is out, for every connection).
    Target(Box<Target>),
}

/// A request as the lean HTTP/1.1 client writes it.
#[derive(Debug, Clone)]
pub(crate) struct Wire {
    /// Request line, headers and body.
    pub(crate) bytes: Bytes,
    /// It is a HEAD (its response has no body).
    pub(crate) head: bool,
    /// Its body's length.
    pub(crate) body: u64,
}
