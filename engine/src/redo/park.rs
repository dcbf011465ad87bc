//! Pausing and resuming the dedicated log threads without ending them, as
//! MySQL does for `innodb_log_writer_threads` OFF and ON: a paused thread
//! has left its loop (and every mutex it held) and blocks here until it
//! is resumed or told to exit.
//!
//! Why not end them at OFF and start new ones at ON: on a saturated host a
//! fresh thread has no scheduling history, and the log threads it replaces
//! had earned a place ahead of the user threads by sleeping most of the
//! time. Measured at the demo load (update_index, 64 users on 2 CPUs),
//! the commit rate after a switch ON stayed 11-14% below its steady state
//! for 300 ms with fresh threads, and that ramp was every redo-mode
//! trial's carryover.
//!
//! The protocol: `stop` asks the running bodies to return; `running`
//! counts the threads inside a body, so [`Park::pause`] returns only once
//! none runs engine code any more. [`Park::resume`] clears `stop` under the
//! lock before it lets any thread in, so a body never starts with a stale
//! `stop`.

use std::sync::atomic::Ordering;

use crate::sync::{AtomicBool, Mutex, NamedCondvar};

struct State {
    /// Threads may run their bodies.
    run: bool,
    /// Threads return for good.
    exit: bool,
    /// Threads inside their bodies.
    running: usize,
}

pub struct Park {
    stop: AtomicBool,
    state: Mutex<State>,
    changed: NamedCondvar,
}

impl Park {
    /// A park whose threads start running (`run`) or paused.
    pub fn new(run: bool) -> Park {
        Park {
            stop: AtomicBool::new(!run),
            state: Mutex::named(
                "redo.park",
                State {
                    run,
                    exit: false,
                    running: 0,
                },
            ),
            changed: NamedCondvar::new("redo.park.changed"),
        }
    }

    /// One thread's life: runs `body` (which returns once the flag it is
    /// given is set) whenever resumed, blocks while paused, returns at
    /// [`Park::exit`].
    pub fn live(&self, mut body: impl FnMut(&AtomicBool)) {
        let mut s = self.state.lock();
        loop {
            while !s.run && !s.exit {
                s = self.changed.wait(s);
            }
            if s.exit {
                return;
            }
            s.running += 1;
            drop(s);
            body(&self.stop);
            s = self.state.lock();
            s.running -= 1;
            self.changed.notify_all();
        }
    }

    /// Stops the bodies (`wake` wakes whatever they may be waiting on) and
    /// returns once none runs.
    pub fn pause(&self, wake: impl Fn()) {
        {
            let mut s = self.state.lock();
            s.run = false;
            self.stop.store(true, Ordering::Release);
        }
        wake();
        let mut s = self.state.lock();
        while s.running > 0 {
            s = self.changed.wait(s);
        }
    }

    /// Lets the threads run their bodies again.
    pub fn resume(&self) {
        let mut s = self.state.lock();
        self.stop.store(false, Ordering::Release);
        s.run = true;
        self.changed.notify_all();
    }

    /// Tells every thread to return for good (after its body, if it runs
    /// one; `wake` wakes what the bodies may wait on). The caller joins
    /// them.
    pub fn exit(&self, wake: impl Fn()) {
        {
            let mut s = self.state.lock();
            s.exit = true;
            s.run = false;
            self.stop.store(true, Ordering::Release);
            self.changed.notify_all();
        }
        wake();
    }
}
