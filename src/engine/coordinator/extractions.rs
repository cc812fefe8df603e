//! `:extract NAME=CSS`: a custom extraction added while the crawl runs. It
//! applies to pages fetched from then on, and is written into the data
//! directory's crawl.toml, which a resume reads, so it outlives the process.

use std::path::Path;

use super::Coordinator;
use crate::engine::config::{extract, CrawlConfig, ExtractionSpec, CONFIG_FILE};
use crate::engine::extract::custom::Extractions;

impl Coordinator {
    /// Checks, stores, then applies `spec`; refused with the reason, and
    /// nothing changed, if any step fails.
    pub(super) fn add_extraction(&mut self, spec: ExtractionSpec) -> Result<String, String> {
        spec.check()?;
        let mut list = self.cfg.extract.clone();
        if let Some(same) = list
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(&spec.name))
        {
            return Err(format!(
                "an extraction named {} exists ({}): pick another name, so values of one column come from one selector",
                same.name,
                same.describe()
            ));
        }
        list.push(spec.clone());
        extract::check_list(&list)?;
        let compiled = Extractions::compile(&list)?;
        self.store_extraction(&spec)
            .map_err(|e| format!("extraction {} not added: {e}", spec.name))?;
        self.workers.set_extractions(compiled);
        self.cfg.extract = list;
        tracing::info!(extraction = %spec.describe(), "custom extraction added");
        Ok(format!(
            "extraction {} added: pages fetched from now on get its values (pages --csv column {}, written to {CONFIG_FILE})",
            spec.describe(),
            spec.name
        ))
    }

    /// Adds `spec` to the data directory's crawl.toml (the engine's own
    /// settings when there is none yet).
    fn store_extraction(&self, spec: &ExtractionSpec) -> Result<(), String> {
        let path = Path::new(&self.data_dir).join(CONFIG_FILE);
        let mut stored = match path.is_file() {
            true => CrawlConfig::load(&path).map_err(|e| e.to_string())?,
            false => self.cfg.clone(),
        };
        extract::add_or_replace(&mut stored.extract, spec.clone());
        stored.save(&path).map_err(|e| e.to_string())
    }

    /// The names of the extractions in force, for the snapshot.
    pub(super) fn extraction_names(&self) -> Vec<String> {
        self.cfg.extract.iter().map(|s| s.name.clone()).collect()
    }
}
