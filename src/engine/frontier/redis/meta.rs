//! What workers of one crawl share besides the frontier: the seeds (scope
//! and allowed address classes derive from them, so a worker that joins
//! without seeds needs them).

use super::RedisFrontier;
use crate::engine::store::StoreError;

impl RedisFrontier {
    /// Adds `mine` to the crawl's seeds and returns all of them, sorted.
    pub fn share_seeds(&mut self, mine: &[String]) -> Result<Vec<String>, StoreError> {
        let key = format!("{}seeds", self.prefix);
        let mut all: Vec<String> = self.link.query("sharing the seeds", |c| {
            let mut pipe = ::redis::pipe();
            if !mine.is_empty() {
                pipe.cmd("SADD").arg(&key).arg(mine).ignore();
            }
            pipe.cmd("SMEMBERS").arg(&key);
            pipe.query::<(Vec<String>,)>(c).map(|(all,)| all)
        })?;
        all.sort();
        Ok(all)
    }
}
