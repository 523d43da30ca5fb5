//! The calls in flight, as the event loop polls them: each call has its own waker, and a
//! woken call's id goes to a queue the loop drains, so the loop polls only the calls that
//! can move.
//!
//! `FuturesUnordered` would do the same, but it wakes its owner every time it has polled
//! as many futures as it holds: with one call in flight, after every poll. For a program
//! awaiting one call after another, that spurious wake-up keeps the loop's task runnable
//! just when the tool's answer is awaited, and costs an extra turn of the executor per
//! call (measured with `benches/mcp.rs`: one more `epoll_wait` per call, and 10 to 40 µs).
//! Here a call is polled again only when its own waker fires; a call that wakes itself
//! while polled is polled once per drain, so it cannot starve the loop.
//!
//! ```text
//!   tool function ── first poll with CallWaker(id) ──> pending: InFlight::insert
//!   resource wakes CallWaker(id) ──> Woken.ids += id, Woken.parent.wake()
//!   loop: InFlight::poll_next ── register parent, take ids, poll each ──> (id, outcome)
//! ```

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};

use futures::task::AtomicWaker;

use super::calls::{CallFuture, CallId};
use crate::dispatch::Outcome;
use crate::value::FxBuild;

/// The calls whose wakers fired since the loop last looked, and the loop's waker.
#[derive(Default)]
pub(super) struct Woken {
    ids: Mutex<Vec<CallId>>,
    parent: AtomicWaker,
}

impl Woken {
    /// The waker of call `id`: firing it queues `id` and wakes the loop.
    pub(super) fn waker(self: &Arc<Self>, id: CallId) -> CallWake {
        self.waker_reusing(id, None)
    }

    /// [`waker`](Self::waker), in the block of `spare` (a waker of this set that nothing
    /// holds any more) instead of a new one when there is one.
    pub(super) fn waker_reusing(
        self: &Arc<Self>,
        id: CallId,
        spare: Option<SpareWake>,
    ) -> CallWake {
        let call = match spare {
            Some(SpareWake(mut call)) if Arc::ptr_eq(&call.woken, self) => {
                if let Some(c) = Arc::get_mut(&mut call) {
                    c.id = id;
                    *c.queued.get_mut() = false;
                    call
                } else {
                    self.new_waker(id)
                }
            }
            _ => self.new_waker(id),
        };
        CallWake {
            waker: Waker::from(call.clone()),
            call,
        }
    }

    fn new_waker(self: &Arc<Self>, id: CallId) -> Arc<CallWaker> {
        Arc::new(CallWaker {
            id,
            queued: AtomicBool::new(false),
            woken: self.clone(),
        })
    }

    fn take(&self, into: &mut VecDeque<CallId>) {
        let mut ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        into.extend(ids.drain(..));
    }
}

/// One call's waker, and the flag the set clears before it polls the call.
pub(super) struct CallWake {
    call: Arc<CallWaker>,
    waker: Waker,
}

impl CallWake {
    pub(super) fn waker(&self) -> &Waker {
        &self.waker
    }

    /// The block of this waker for the next call, when nothing kept a clone of it (a call
    /// that was done on its first poll): most calls then make no waker of their own.
    pub(super) fn recycle(self) -> Option<SpareWake> {
        drop(self.waker);
        let mut call = self.call;
        Arc::get_mut(&mut call)?;
        Some(SpareWake(call))
    }
}

/// A call's waker that nothing holds any more, kept for the next call (see
/// [`CallWake::recycle`]).
pub(super) struct SpareWake(Arc<CallWaker>);

struct CallWaker {
    id: CallId,
    /// Whether `id` waits in [`Woken::ids`] already (cleared when the call is polled).
    queued: AtomicBool,
    woken: Arc<Woken>,
}

impl Wake for CallWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if !self.queued.swap(true, Ordering::AcqRel) {
            self.woken
                .ids
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(self.id);
        }
        self.woken.parent.wake();
    }
}

/// A call in flight: its future and the waker it is polled with.
struct Slot {
    future: CallFuture,
    wake: CallWake,
}

/// The set of calls in flight, owned by the loop.
pub(super) struct InFlight {
    calls: HashMap<CallId, Slot, FxBuild>,
    woken: Arc<Woken>,
    /// Ids taken from [`Woken`], to poll in this drain.
    due: VecDeque<CallId>,
}

impl InFlight {
    pub(super) fn new(woken: Arc<Woken>) -> Self {
        InFlight {
            calls: HashMap::default(),
            woken,
            due: VecDeque::new(),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Adds call `id`. `waker` is the one its first poll used (`None`: never polled yet,
    /// so it is polled in the next drain).
    pub(super) fn insert(&mut self, id: CallId, future: CallFuture, wake: Option<CallWake>) {
        let wake = match wake {
            Some(wake) => wake,
            None => {
                self.due.push_back(id);
                self.woken.waker(id)
            }
        };
        self.calls.insert(id, Slot { future, wake });
    }

    /// The next call to finish, polling only calls whose waker fired: `Ready(None)` when
    /// none is in flight, `Pending` (with the loop's waker registered) when none is done.
    pub(super) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<(CallId, Outcome)>> {
        if self.calls.is_empty() {
            return Poll::Ready(None);
        }
        // Register before looking, so a wake-up in between is not lost.
        self.woken.parent.register(cx.waker());
        match self.next_done() {
            Some(done) => Poll::Ready(Some(done)),
            None => Poll::Pending,
        }
    }

    /// The next call that is done among those woken, without waiting. The calls woken
    /// while this runs wait for the next call of it: a call that wakes itself while polled
    /// is polled once per call, so it cannot keep the loop here.
    pub(super) fn next_done(&mut self) -> Option<(CallId, Outcome)> {
        self.woken.take(&mut self.due);
        loop {
            let id = self.due.pop_front()?;
            // A call that finished, or a wake-up that came twice.
            let Some(slot) = self.calls.get_mut(&id) else {
                continue;
            };
            slot.wake.call.queued.store(false, Ordering::Release);
            if let Poll::Ready(outcome) = slot
                .future
                .as_mut()
                .poll(&mut Context::from_waker(&slot.wake.waker))
            {
                self.calls.remove(&id);
                return Some((id, outcome));
            }
        }
    }

    /// Drops every call (their futures' drop cancels what they hold).
    pub(super) fn clear(&mut self) {
        self.calls.clear();
        self.due.clear();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::task::Waker;

    use super::*;
    use crate::dispatch::ToolError;

    fn outcome() -> Outcome {
        Outcome::error(
            crate::dispatch::CallId(0),
            Arc::from("t"),
            ToolError::cancelled(),
        )
    }

    /// A call that is pending until `open` is set, counting its polls and keeping the
    /// last waker it was polled with.
    struct Gate {
        open: Arc<AtomicBool>,
        polls: Arc<AtomicUsize>,
        waker: Arc<Mutex<Option<Waker>>>,
    }

    fn gate() -> (Gate, CallFuture) {
        let gate = Gate {
            open: Arc::default(),
            polls: Arc::default(),
            waker: Arc::default(),
        };
        let (open, polls, waker) = (gate.open.clone(), gate.polls.clone(), gate.waker.clone());
        let future = Box::pin(std::future::poll_fn(move |cx| {
            polls.fetch_add(1, Ordering::SeqCst);
            *waker.lock().unwrap() = Some(cx.waker().clone());
            if open.load(Ordering::SeqCst) {
                Poll::Ready(outcome())
            } else {
                Poll::Pending
            }
        }));
        (gate, future)
    }

    impl Gate {
        fn wake(&self) {
            self.waker.lock().unwrap().as_ref().unwrap().wake_by_ref();
        }
        fn polls(&self) -> usize {
            self.polls.load(Ordering::SeqCst)
        }
    }

    #[test]
    fn a_waker_nothing_kept_serves_the_next_call_and_one_kept_does_not() {
        let woken = Arc::new(Woken::default());
        // Nothing kept it, and it fired while its call ran: the next call gets its block,
        // unfired, and firing it names the new call.
        let first = woken.waker(1);
        first.waker().wake_by_ref();
        let spare = first.recycle().expect("nobody holds it");
        let block = Arc::as_ptr(&spare.0);
        let second = woken.waker_reusing(2, Some(spare));
        assert!(std::ptr::eq(Arc::as_ptr(&second.call), block));
        second.waker().wake_by_ref();
        assert_eq!(*woken.ids.lock().unwrap(), vec![1, 2]);
        // A clone kept (a call that waits): no spare.
        let kept = second.waker().clone();
        assert!(second.recycle().is_none());
        kept.wake();
        // A spare from another run's set is not used.
        let other = Arc::new(Woken::default());
        let spare = woken.waker(3).recycle().unwrap();
        let fresh = other.waker_reusing(4, Some(spare));
        assert!(Arc::ptr_eq(&fresh.call.woken, &other));
        assert_eq!(fresh.call.id, 4);
    }

    #[test]
    fn a_call_is_polled_only_when_its_own_waker_fires() {
        let woken = Arc::new(Woken::default());
        let mut set = InFlight::new(woken.clone());
        let (a, fa) = gate();
        let (b, fb) = gate();
        // Both never polled yet: the first drain polls each once.
        set.insert(1, fa, None);
        set.insert(2, fb, None);
        assert!(set.next_done().is_none());
        assert_eq!((a.polls(), b.polls()), (1, 1));
        // Nothing woke: nothing is polled.
        assert!(set.next_done().is_none());
        assert_eq!((a.polls(), b.polls()), (1, 1));
        // Only b's waker fires, twice: b is polled once, a not at all.
        b.wake();
        b.wake();
        assert!(set.next_done().is_none());
        assert_eq!((a.polls(), b.polls()), (1, 2));
        // a is done once woken; its outcome comes with its id, and the set forgets it.
        a.open.store(true, Ordering::SeqCst);
        a.wake();
        assert_eq!(set.next_done().map(|(id, _)| id), Some(1));
        assert!(!set.is_empty());
        b.open.store(true, Ordering::SeqCst);
        b.wake();
        assert_eq!(set.next_done().map(|(id, _)| id), Some(2));
        assert!(set.is_empty());
    }

    #[test]
    fn a_call_polled_before_it_joins_the_set_keeps_its_wake_up() {
        let woken = Arc::new(Woken::default());
        let mut set = InFlight::new(woken.clone());
        let (a, mut fa) = gate();
        // The tool function's first poll, with the call's own waker.
        let wake = woken.waker(7);
        assert!(
            fa.as_mut()
                .poll(&mut Context::from_waker(wake.waker()))
                .is_pending()
        );
        // The answer arrives before the loop takes the call.
        a.open.store(true, Ordering::SeqCst);
        a.wake();
        set.insert(7, fa, Some(wake));
        assert_eq!(set.next_done().map(|(id, _)| id), Some(7));
        assert_eq!(a.polls(), 2);
    }

    #[test]
    fn a_call_that_wakes_itself_is_polled_once_per_drain_and_wakes_the_loop() {
        let woken = Arc::new(Woken::default());
        let mut set = InFlight::new(woken.clone());
        let polls = Arc::new(AtomicUsize::new(0));
        let counted = polls.clone();
        set.insert(
            1,
            Box::pin(std::future::poll_fn(move |cx| {
                counted.fetch_add(1, Ordering::SeqCst);
                cx.waker().wake_by_ref();
                Poll::<Outcome>::Pending
            })),
            None,
        );
        let loop_wakes = Arc::new(LoopWaker::default());
        let waker = Waker::from(loop_wakes.clone());
        assert!(set.poll_next(&mut Context::from_waker(&waker)).is_pending());
        assert_eq!(polls.load(Ordering::SeqCst), 1);
        assert_eq!(loop_wakes.0.load(Ordering::SeqCst), 1);
        assert!(set.poll_next(&mut Context::from_waker(&waker)).is_pending());
        assert_eq!(polls.load(Ordering::SeqCst), 2);
        set.clear();
        assert!(matches!(
            set.poll_next(&mut Context::from_waker(&waker)),
            Poll::Ready(None)
        ));
    }

    #[derive(Default)]
    struct LoopWaker(AtomicUsize);

    impl Wake for LoopWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}
