//! The tokio driver's state, shared by its tasks: the core, the dial, the idle lanes, the
//! count of live tasks, and the flags and wake-ups that end the run.

use std::cell::Cell;
use std::rc::Rc;

use tokio::sync::Notify;

use super::idle::IdlePool;
use crate::protocol::Dial;
use crate::worker::shared::Core;

/// The driver's state, shared by its tasks; `L` is the protocol its connections speak.
pub(super) struct Tokio<L> {
    pub(super) core: Rc<Core>,
    pub(super) dial: Dial,
    pub(super) idle: IdlePool,
    /// Lane tasks plus the dispatcher: the run is over when this reaches 0.
    live_tasks: Cell<u32>,
    pub(super) all_done: Notify,
    /// Wakes the dispatcher when the attack stops or another task ended the schedule.
    pub(super) wake_dispatcher: Notify,
    /// Nothing more will be dispatched.
    pub(super) over: Cell<bool>,
    /// The attack's stop has been passed on to the idle lanes.
    pub(super) stopped: Cell<bool>,
    _protocol: std::marker::PhantomData<L>,
}

impl<L> Tokio<L> {
    /// A driver for `core`'s attack, its connections made with `dial`.
    pub(super) fn new(core: Rc<Core>, dial: Dial) -> Tokio<L> {
        Tokio {
            core,
            dial,
            idle: IdlePool::default(),
            live_tasks: Cell::new(0),
            all_done: Notify::new(),
            wake_dispatcher: Notify::new(),
            over: Cell::new(false),
            stopped: Cell::new(false),
            _protocol: std::marker::PhantomData,
        }
    }

    /// Starts `task`, counted among the live ones.
    pub(super) fn spawn<F: Future<Output = ()> + 'static>(&self, task: F) {
        self.live_tasks.set(self.live_tasks.get() + 1);
        tokio::task::spawn_local(task);
    }

    /// A task has ended; the run is over when none is left.
    pub(super) fn task_ended(&self) {
        let left = self.live_tasks.get() - 1;
        self.live_tasks.set(left);
        if left == 0 {
            self.all_done.notify_one();
        }
    }

    /// Once the attack stops (told by the clock, or a lane found no target left): idle
    /// lanes stop waiting and the dispatcher ends the schedule.
    pub(super) fn pass_on_stop(&self) {
        if self.core.stopping() && !self.stopped.replace(true) {
            self.idle.close_all();
            self.wake_dispatcher.notify_one();
        }
    }
}
