//! Where a registry keeps its policy hooks, and the handles that remove them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use super::around::Around;
use super::guard::Guard;
use super::observe::Observer;
use super::post_execute::PostExecute;
use super::pre_execute::{Approver, PreExecute};
use super::registry::WeakRegistry;

/// One registry's hooks, replaced as a whole when a hook is added or removed, so a call
/// reads them with one reference-count increment.
#[derive(Clone)]
pub(crate) struct HookSet {
    pub(crate) pre: Vec<(u64, Arc<dyn PreExecute>)>,
    pub(crate) guards: Vec<(u64, Arc<dyn Guard>)>,
    pub(crate) around: Vec<(u64, Arc<dyn Around>)>,
    /// `around` without ids, outermost first, for [`super::around::Next`].
    pub(crate) chain: Arc<[Arc<dyn Around>]>,
    pub(crate) post: Vec<(u64, Arc<dyn PostExecute>)>,
    pub(crate) observers: Vec<(u64, Arc<dyn Observer>)>,
    pub(crate) approver: Option<Arc<dyn Approver>>,
}

impl Default for HookSet {
    fn default() -> Self {
        HookSet {
            pre: Vec::new(),
            guards: Vec::new(),
            around: Vec::new(),
            chain: Arc::from(Vec::new()),
            post: Vec::new(),
            observers: Vec::new(),
            approver: None,
        }
    }
}

#[derive(Default)]
pub(crate) struct Hooks {
    set: RwLock<Arc<HookSet>>,
    next_id: AtomicU64,
}

impl Hooks {
    pub(crate) fn snapshot(&self) -> Arc<HookSet> {
        self.set
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn update(&self, change: impl FnOnce(&mut HookSet, u64)) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let mut guard = self.set.write().unwrap_or_else(PoisonError::into_inner);
        let mut set = (**guard).clone();
        change(&mut set, id);
        set.chain = set.around.iter().map(|(_, a)| a.clone()).collect();
        *guard = Arc::new(set);
        id
    }

    fn remove(&self, id: u64) {
        let mut guard = self.set.write().unwrap_or_else(PoisonError::into_inner);
        let mut set = (**guard).clone();
        set.pre.retain(|(i, _)| *i != id);
        set.guards.retain(|(i, _)| *i != id);
        set.around.retain(|(i, _)| *i != id);
        set.post.retain(|(i, _)| *i != id);
        set.observers.retain(|(i, _)| *i != id);
        set.chain = set.around.iter().map(|(_, a)| a.clone()).collect();
        *guard = Arc::new(set);
    }
}

/// Keeps a hook installed; dropping it removes the hook ([`HookHandle::forget`] keeps it
/// for the registry's whole life).
#[must_use = "dropping the handle removes the hook at once; call .forget() to keep it"]
pub struct HookHandle {
    pub(crate) registry: WeakRegistry,
    pub(crate) id: u64,
}

impl std::fmt::Debug for HookHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookHandle").field("id", &self.id).finish()
    }
}

impl HookHandle {
    /// Removes the hook now.
    pub fn dispose(self) {
        drop(self);
    }

    /// Keeps the hook for the registry's whole life.
    pub fn forget(mut self) {
        self.registry = WeakRegistry::dangling();
    }
}

impl Drop for HookHandle {
    fn drop(&mut self) {
        if let Some(registry) = self.registry.upgrade() {
            registry.inner.hooks.remove(self.id);
        }
    }
}
