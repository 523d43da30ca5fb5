//! Scoping of the built-in file tools to one root folder.
//!
//! A requested path is relative to the root; an absolute path is accepted only inside it.
//! Paths are first normalised lexically (so `..` cannot climb out before the filesystem is
//! touched), then resolved with symlinks followed and checked again, so a symlink that
//! points outside the root is refused the same way.

use std::path::{Component, Path, PathBuf};

use crate::dispatch::ToolError;

/// The folder the file tools may touch.
#[derive(Clone, Debug)]
pub(crate) struct Root {
    path: PathBuf,
}

impl Root {
    /// `path` must be an existing folder; it is resolved (symlinks followed) once here.
    pub(crate) fn new(path: &Path) -> std::io::Result<Root> {
        let path = path.canonicalize()?;
        if !path.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                "not a folder (the root is the folder the file tools may touch)",
            ));
        }
        Ok(Root { path })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The lexical absolute form of `requested` (no filesystem access), or an error when it
    /// lies outside the root.
    fn lexical(&self, requested: &str) -> Result<PathBuf, ToolError> {
        let p = Path::new(requested);
        let joined = if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.path.join(p)
        };
        let mut out = PathBuf::new();
        for c in joined.components() {
            match c {
                Component::ParentDir => {
                    out.pop();
                }
                Component::CurDir => {}
                other => out.push(other.as_os_str()),
            }
        }
        if !out.starts_with(&self.path) {
            return Err(outside(requested));
        }
        Ok(out)
    }

    /// Resolves an existing path inside the root (symlinks followed).
    ///
    /// # Errors
    /// Outside the root (through `..`, an absolute path or a symlink), or not found.
    pub(crate) fn resolve(&self, requested: &str) -> Result<PathBuf, ToolError> {
        let lexical = self.lexical(requested)?;
        let real = lexical.canonicalize().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                ToolError::new(format!("{requested}: no such file or directory"))
            }
            _ => ToolError::new(format!("{requested}: {e}")),
        })?;
        if !real.starts_with(&self.path) {
            return Err(outside(requested));
        }
        Ok(real)
    }

    /// Whether an already-resolved path (e.g. met while walking) is inside the root after
    /// following symlinks.
    pub(crate) fn contains_real(&self, path: &Path) -> bool {
        path.canonicalize().is_ok_and(|p| p.starts_with(&self.path))
    }

    /// `path` relative to the root, with `/` separators (`.` for the root itself).
    pub(crate) fn relative(&self, path: &Path) -> String {
        let rel = path.strip_prefix(&self.path).unwrap_or(path);
        let s: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if s.is_empty() {
            ".".to_owned()
        } else {
            s.join("/")
        }
    }
}

fn outside(requested: &str) -> ToolError {
    ToolError::new(format!(
        "{requested}: the path is outside the root folder; use a path relative to the root"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_dot_cannot_climb_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path()).unwrap();
        assert!(root.lexical("a/../../etc/passwd").is_err());
        assert!(root.lexical("/etc/passwd").is_err());
        assert!(root.lexical("a/../b").is_ok());
    }
}
