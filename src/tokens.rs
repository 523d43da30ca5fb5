//! Token counts of the text a model reads (tool descriptions, declarations), with the BPE
//! vocabularies OpenAI publishes for its models, through `tiktoken-rs`.
//!
//! The budget that decides between full declarations and an index in `run_code`'s
//! description (see [`crate::run_code::RunCodeConfig::tool_budget`]) is counted in
//! [`Encoding::O200kBase`] tokens. A vocabulary is loaded on first use (tens of
//! milliseconds) and kept for the life of the process; [`count_tokens`] skips the load
//! when the text's length in bytes already answers the question (a token is at least one
//! byte).

/// A BPE vocabulary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Encoding {
    /// `o200k_base` (GPT-4o and later).
    O200kBase,
    /// `cl100k_base` (GPT-4, GPT-3.5).
    Cl100kBase,
}

/// The number of tokens of `text` in `encoding` (special tokens are counted as text).
pub fn count_tokens(text: &str, encoding: Encoding) -> usize {
    let bpe = match encoding {
        Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
        Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
    };
    bpe.encode_ordinary(text).len()
}

/// Whether `text` is more than `budget` tokens of `o200k_base`; the vocabulary is loaded
/// only when `text` has more than `budget` bytes.
pub fn over_budget(text: &str, budget: usize) -> bool {
    text.len() > budget && count_tokens(text, Encoding::O200kBase) > budget
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_match_the_published_vocabularies() {
        // Figures of OpenAI's tiktoken for the same text.
        assert_eq!(count_tokens("hello world", Encoding::O200kBase), 2);
        assert_eq!(count_tokens("hello world", Encoding::Cl100kBase), 2);
        assert_eq!(count_tokens("", Encoding::O200kBase), 0);
        assert!(!over_budget("hello world", 2));
        assert!(over_budget("hello world", 1));
    }
}
