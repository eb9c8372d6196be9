//! `OfflineEmbeddings`: vectors from the text alone — no model, no weights, no network.
//!
//! Each lowercase word, padded with spaces, contributes its character trigrams and itself;
//! each feature is hashed (FNV-1a, 64 bits) to one of `dims` slots with a sign from another
//! bit of the hash (so unrelated features cancel out rather than pile up), and the vector is
//! L2-normalized. Texts sharing words and word pieces ("sleeps" / "sleeping") are close; it
//! is lexical similarity, not meaning: "car" and "automobile" are unrelated here. Use it for
//! tests, demos and offline programs; a model (OpenAI, Ollama) for real semantic search.

use async_trait::async_trait;

use super::Embeddings;
use crate::error::LlmError;

/// Deterministic hashed character n-gram embeddings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OfflineEmbeddings {
    dims: usize,
}

impl OfflineEmbeddings {
    /// The dimensions of `init_embeddings("offline")`.
    pub const DEFAULT_DIMS: usize = 256;

    /// Vectors of `dims` dimensions (at least 1).
    pub fn new(dims: usize) -> Self {
        OfflineEmbeddings { dims: dims.max(1) }
    }

    /// The vector of one text.
    pub fn vector(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0.0f32; self.dims];
        let lower = text.to_lowercase();
        for word in lower
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            self.add(&mut v, word.as_bytes(), 2.0);
            let padded: Vec<char> = std::iter::once(' ')
                .chain(word.chars())
                .chain(std::iter::once(' '))
                .collect();
            for gram in padded.windows(3) {
                let gram: String = gram.iter().collect();
                self.add(&mut v, gram.as_bytes(), 1.0);
            }
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
        v
    }

    fn add(&self, v: &mut [f32], feature: &[u8], weight: f32) {
        let hash = feature.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        let slot = (hash % self.dims as u64) as usize;
        let sign = if hash >> 63 == 1 { -1.0 } else { 1.0 };
        v[slot] += sign * weight;
    }
}

#[async_trait]
impl Embeddings for OfflineEmbeddings {
    fn dims(&self) -> Option<usize> {
        Some(self.dims)
    }

    async fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LlmError> {
        let vectors = async { Ok(texts.iter().map(|t| self.vector(t)).collect()) };
        crate::observe::observe_embed("offline", "offline", Some(self.dims), texts.len(), vectors)
            .await
    }
}

#[async_trait]
impl agent_core::store::Embed for OfflineEmbeddings {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, agent_core::BoxError> {
        Ok(self.embed_documents(texts).await?)
    }
}

#[cfg(test)]
mod tests {
    use agent_core::store::cosine;

    use super::*;

    #[test]
    fn deterministic_normalized_and_lexical() {
        let e = OfflineEmbeddings::new(256);
        let a = e.vector("The cat sleeps on the sofa");
        assert_eq!(a, e.vector("the CAT sleeps, on the sofa!"));
        let norm: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5);
        let near = cosine(&a, &e.vector("a sleeping cat"));
        let far = cosine(&a, &e.vector("quarterly tax report"));
        assert!(near > far + 0.2, "near {near}, far {far}");
        assert!(e.vector("").iter().all(|x| *x == 0.0));
    }
}
