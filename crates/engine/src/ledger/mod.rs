//! A worker's accounts: the ledger every request due is entered in once and leaves by one
//! door ([`Books`]), and how each request's end is recorded there, in its stage and in the
//! breakdowns ([`Recorder`]). Neither knows the load model or the driver.

mod books;
mod objects;
mod recorder;

pub(crate) use books::Books;
pub(crate) use objects::ObjectDraws;
pub(crate) use recorder::{Ended, Flow, Recorder, Stages};
