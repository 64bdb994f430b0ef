//! Small SDK processes for scenarios the samples do not cover; one file per process.
//! Each records what its worker saw in a [`Recorder`] the test holds on to.

pub mod counted_site;
pub mod entity;
pub mod flaky;
pub mod hang;
pub mod park;
pub mod queue;
pub mod raw_worker;
pub mod threads;
pub mod timer;

use std::sync::{Arc, Mutex};

/// A shared log a worker appends to and a test reads.
#[derive(Debug)]
pub struct Recorder<T>(Arc<Mutex<Vec<T>>>);

impl<T> Clone for Recorder<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T> Default for Recorder<T> {
    fn default() -> Self {
        Self(Arc::default())
    }
}

impl<T: Clone> Recorder<T> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&self, item: T) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(item);
    }

    /// Everything recorded so far, oldest first.
    pub fn all(&self) -> Vec<T> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
