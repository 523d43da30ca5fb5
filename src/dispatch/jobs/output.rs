//! A job's output buffer: what a producer writes while it runs and `job_output` reads once.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Notify;

/// What one read of a job's output returned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OutputRead {
    /// The text read, at most the bytes asked for, cut on a character boundary, with a
    /// "… N earlier bytes dropped" line first when the buffer overflowed since the last
    /// read, and a "… N more bytes" line last when more is waiting.
    pub text: String,
    /// Bytes still unread after this read (read them with the next call).
    pub more_bytes: usize,
    /// Bytes the buffer dropped (oldest first) since the last read because nobody read them
    /// before the buffer was full.
    pub dropped_bytes: u64,
}

impl OutputRead {
    /// Whether the read found nothing new.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }
}

/// A consuming, bounded buffer of a job's text output (`read_output` of the producer
/// contract).
///
/// [`OutputBuffer::push`] appends; past `capacity` bytes of unread text the oldest bytes are
/// dropped and counted. [`OutputBuffer::read`] takes from the front what fits and never
/// returns it again. Every push wakes the job's readers waiting for news (`job_output`
/// with `wait_ms`).
#[derive(Debug)]
pub struct OutputBuffer {
    state: Mutex<State>,
    capacity: usize,
    news: Arc<Notify>,
}

#[derive(Debug, Default)]
struct State {
    text: String,
    dropped: u64,
}

impl OutputBuffer {
    pub(crate) fn new(capacity: usize, news: Arc<Notify>) -> OutputBuffer {
        OutputBuffer {
            state: Mutex::new(State::default()),
            capacity: capacity.max(1),
            news,
        }
    }

    /// Appends `text`; drops the oldest unread bytes past the capacity.
    pub fn push(&self, text: &str) {
        if text.is_empty() {
            return;
        }
        {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.text.push_str(text);
            if state.text.len() > self.capacity {
                let over = state.text.len() - self.capacity;
                let cut = ceil_char_boundary(&state.text, over);
                state.text.drain(..cut);
                state.dropped += cut as u64;
            }
        }
        self.news.notify_waiters();
    }

    /// Takes up to `max_bytes` of the unread text (see [`OutputRead`]).
    pub fn read(&self, max_bytes: usize) -> OutputRead {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let dropped = std::mem::take(&mut state.dropped);
        let take = floor_char_boundary(&state.text, max_bytes.min(state.text.len()));
        let body: String = state.text.drain(..take).collect();
        let more = state.text.len();
        let mut text = String::with_capacity(body.len() + 64);
        if dropped > 0 {
            text.push_str(&format!(
                "… {dropped} earlier bytes dropped (not read in time)\n"
            ));
        }
        text.push_str(&body);
        if more > 0 {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!("… {more} more bytes"));
        }
        OutputRead {
            text,
            more_bytes: more,
            dropped_bytes: dropped,
        }
    }

    /// Unread bytes waiting.
    pub fn unread(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .text
            .len()
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffer(capacity: usize) -> OutputBuffer {
        OutputBuffer::new(capacity, Arc::new(Notify::new()))
    }

    #[test]
    fn a_read_consumes_what_it_returns_and_says_how_much_is_left() {
        let b = buffer(1024);
        b.push("hello\nworld\n");
        let first = b.read(6);
        assert_eq!(first.text, "hello\n… 6 more bytes");
        assert_eq!(first.more_bytes, 6);
        let second = b.read(100);
        assert_eq!(second.text, "world\n");
        assert_eq!(second.more_bytes, 0);
        assert!(b.read(100).is_empty());
    }

    #[test]
    fn past_the_capacity_the_oldest_bytes_are_dropped_and_counted() {
        let b = buffer(8);
        b.push("0123456789abcdef");
        let r = b.read(100);
        assert_eq!(r.dropped_bytes, 8);
        assert_eq!(
            r.text,
            "… 8 earlier bytes dropped (not read in time)\n89abcdef"
        );
        assert_eq!(b.read(100).dropped_bytes, 0);
    }

    #[test]
    fn cuts_never_split_a_character() {
        let b = buffer(5);
        b.push("ééé");
        // 6 bytes into 5: the first é goes whole.
        let r = b.read(3);
        assert_eq!(r.dropped_bytes, 2);
        assert!(r.text.ends_with("é\n… 2 more bytes"), "{}", r.text);
        assert_eq!(b.read(3).text, "é");
    }
}
