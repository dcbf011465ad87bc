//! The probes' attachments, owned apart from their programs so they can be
//! detached in the order that costs the target least.
//!
//! Detaching one link waits for a grace period (a tracepoint's release
//! synchronises RCU, a uprobe's its tasks-trace flavour), 50-100 ms each,
//! and the kernel serialises them (measured: 15 links closed from 15
//! threads still took 0.75 s, one after the other; left to the programs'
//! own drop, one thread, 1.0 s). For that second the programs still
//! attached keep running at the target's expense, so the scheduler
//! tracepoints, which fire on every context switch of the machine, go
//! first; then the rest, each on a thread of its own so that a kernel which
//! does not serialise them overlaps their waits.

/// Every attachment of one [`crate::Probes`] (aya's owned links: dropping
/// one detaches it); detached on drop.
#[derive(Default)]
pub(crate) struct Links {
    /// Hooks on the busiest events (detached first).
    busy: Vec<Box<dyn Send>>,
    rest: Vec<Box<dyn Send>>,
}

impl Links {
    /// A link whose program runs on every context switch or wakeup.
    pub(crate) fn push_busy(&mut self, link: impl Send + 'static) {
        self.busy.push(Box::new(link));
    }

    pub(crate) fn push(&mut self, link: impl Send + 'static) {
        self.rest.push(Box::new(link));
    }

    pub(crate) fn len(&self) -> usize {
        self.busy.len() + self.rest.len()
    }

    /// Detaches every link, the busy ones first, and returns once all are
    /// gone.
    pub(crate) fn detach_all(&mut self) {
        detach(std::mem::take(&mut self.busy));
        detach(std::mem::take(&mut self.rest));
    }
}

/// Drops the links concurrently and waits for them.
fn detach(links: Vec<Box<dyn Send>>) {
    std::thread::scope(|s| {
        for link in links {
            // A thread refused (resource limits) drops its link here, in
            // turn: slower, never leaked.
            let _ = std::thread::Builder::new()
                .name("probe-detach".into())
                .spawn_scoped(s, move || drop(link));
        }
    });
}

impl Drop for Links {
    fn drop(&mut self) {
        self.detach_all();
    }
}
