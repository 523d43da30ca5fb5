//! Scoping of the built-in file tools to one root folder.
//!
//! A requested path is relative to the root; an absolute path is accepted only inside it.
//! Paths are first normalised lexically (so `..` cannot climb out before the filesystem is
//! touched). A file is then opened by the kernel relative to the root's open folder with
//! `openat2(2)` and `RESOLVE_BENEATH`, which refuses any step of the resolution, a symlink's
//! included, that leaves the root: one system call, no path resolved by hand. Where
//! `openat2` is not available (not Linux, a kernel before 5.6, a seccomp filter that refuses
//! it), and for the tools that walk folders, the path is resolved with symlinks followed
//! and checked again, so a symlink that points outside the root is refused the same way.

use std::fs::File;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::dispatch::ToolError;

/// The folder the file tools may touch.
#[derive(Clone, Debug)]
pub(crate) struct Root {
    path: PathBuf,
    /// The root, open (`O_PATH`), for `openat2`; `None` where that is not available.
    dir: Option<Arc<std::os::fd::OwnedFd>>,
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
        let dir = open_root(&path).map(Arc::new);
        Ok(Root { path, dir })
    }

    /// Opens `requested` for reading, inside the root: the file and its path relative to
    /// the root as [`Root::relative`] writes it (lexical: a symlink is not replaced by its
    /// target). The open does not block on a FIFO (`O_NONBLOCK`; it reads as usual once
    /// open) and does not make a terminal the controlling one.
    ///
    /// # Errors
    /// Outside the root (through `..`, an absolute path or a symlink), or not found, or
    /// another error of the open.
    pub(crate) fn open(&self, requested: &str) -> Result<(File, String), ToolError> {
        // A plain relative path (names joined by single `/`s) is its own lexical form:
        // most calls skip the normalisation.
        let plain = !requested.is_empty()
            && requested
                .split('/')
                .all(|name| !name.is_empty() && name != "." && name != "..");
        let lexical = if plain {
            None
        } else {
            Some(self.lexical(requested)?)
        };
        let shown = || match &lexical {
            None => requested.to_owned(),
            Some(path) => self.relative(path),
        };
        #[cfg(target_os = "linux")]
        if let Some(dir) = &self.dir {
            use rustix::fs::{Mode, OFlags, ResolveFlags, openat2};
            let relative = match &lexical {
                None => Path::new(requested),
                Some(path) => path.strip_prefix(&self.path).unwrap_or(Path::new("")),
            };
            let relative = if relative.as_os_str().is_empty() {
                Path::new(".")
            } else {
                relative
            };
            match openat2(
                dir.as_ref(),
                relative,
                OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY,
                Mode::empty(),
                ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
            ) {
                Ok(fd) => return Ok((File::from(fd), shown())),
                Err(rustix::io::Errno::XDEV) => return Err(outside(requested)),
                // Not available here: resolved by hand below.
                Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => {}
                Err(e) => return Err(open_error(requested, e.into())),
            }
        }
        let real = self.resolve(requested)?;
        let mut options = std::fs::OpenOptions::new();
        options.read(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(
            &mut options,
            libc::O_NONBLOCK | libc::O_NOCTTY,
        );
        let file = options.open(&real).map_err(|e| open_error(requested, e))?;
        Ok((file, shown()))
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
        let real = lexical
            .canonicalize()
            .map_err(|e| open_error(requested, e))?;
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
        let mut out = String::with_capacity(rel.as_os_str().len());
        for c in rel.components() {
            if !out.is_empty() {
                out.push('/');
            }
            out.push_str(&c.as_os_str().to_string_lossy());
        }
        if out.is_empty() {
            out.push('.');
        }
        out
    }
}

/// What [`Root::write`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Written {
    /// The file written, relative to the root (a symlink's target inside the root).
    pub(crate) path: String,
    /// Whether a file was there before (and was replaced).
    pub(crate) existed: bool,
}

impl Root {
    /// Writes `content` to `requested` inside the root, atomically: into a temporary file
    /// beside it, then renamed over it, so a reader sees the old file or the new one, never
    /// a part. Missing parent folders are created. A symlink at the path is written
    /// through when it points inside the root, refused when it points outside; a parent
    /// folder that is a symlink out of the root is refused before anything is created. An
    /// existing file keeps its permission bits; a new one gets `0o644` less the umask. The
    /// data is not `fsync`ed (atomic for readers, not against a power cut).
    ///
    /// # Errors
    /// Outside the root, the root itself or a folder, or an I/O error (with the path).
    pub(crate) fn write(&self, requested: &str, content: &[u8]) -> Result<Written, ToolError> {
        let lexical = self.lexical(requested)?;
        if lexical == self.path {
            return Err(ToolError::new(format!(
                "{requested}: that is the root folder, not a file"
            )));
        }
        // The file the content goes to: a symlink's target, inside the root.
        let target = match std::fs::symlink_metadata(&lexical) {
            Ok(m) if m.file_type().is_symlink() => self.resolve(requested)?,
            _ => lexical,
        };
        let parent = target
            .parent()
            .ok_or_else(|| outside(requested))?
            .to_path_buf();
        let name = target
            .file_name()
            .ok_or_else(|| outside(requested))?
            .to_owned();
        self.make_folders(requested, &parent)?;
        let shown = self.relative(&target);
        let fail = |e: std::io::Error| ToolError::new(format!("{shown}: {e}"));
        let existing = match std::fs::symlink_metadata(&target) {
            Ok(m) if m.is_dir() => {
                return Err(ToolError::new(format!(
                    "{shown}: is a folder; give the path of a file"
                )));
            }
            Ok(m) if !m.is_file() => {
                return Err(ToolError::new(format!(
                    "{shown}: not a regular file (a FIFO, a socket or a device); it is left as it is"
                )));
            }
            Ok(m) => Some(m),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(fail(e)),
        };
        #[cfg(unix)]
        let mode = existing.as_ref().map_or(0o644, |m| {
            std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o7777
        });
        #[cfg(not(unix))]
        let mode = 0o644;
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let temp_name = format!(
            ".{}.codemode-{}-{}.tmp",
            name.to_string_lossy(),
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        #[cfg(target_os = "linux")]
        if let Some(dir) = &self.dir {
            use rustix::fs::{
                AtFlags, Mode, OFlags, ResolveFlags, openat, openat2, renameat, unlinkat,
            };
            let relative_parent = parent.strip_prefix(&self.path).unwrap_or(Path::new(""));
            let relative_parent = if relative_parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                relative_parent
            };
            // The parent, opened beneath the root by the kernel: a folder swapped for a
            // symlink since the checks above cannot move the write out.
            match openat2(
                dir.as_ref(),
                relative_parent,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
                ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
            ) {
                Ok(folder) => {
                    let temp = openat(
                        &folder,
                        temp_name.as_str(),
                        OFlags::WRONLY
                            | OFlags::CREATE
                            | OFlags::EXCL
                            | OFlags::CLOEXEC
                            | OFlags::NOFOLLOW,
                        Mode::from_raw_mode(mode),
                    )
                    .map_err(|e| fail(e.into()))?;
                    let mut file = File::from(temp);
                    let done = std::io::Write::write_all(&mut file, content)
                        .and_then(|()| {
                            // The mode asked for, whatever the umask (an existing file's own).
                            if existing.is_some() {
                                rustix::fs::fchmod(&file, Mode::from_raw_mode(mode))
                                    .map_err(std::io::Error::from)
                            } else {
                                Ok(())
                            }
                        })
                        .and_then(|()| {
                            renameat(&folder, temp_name.as_str(), &folder, name.as_os_str())
                                .map_err(std::io::Error::from)
                        });
                    if let Err(e) = done {
                        let _ = unlinkat(&folder, temp_name.as_str(), AtFlags::empty());
                        return Err(fail(e));
                    }
                    return Ok(Written {
                        path: shown,
                        existed: existing.is_some(),
                    });
                }
                Err(rustix::io::Errno::XDEV) => return Err(outside(requested)),
                Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => {}
                Err(e) => return Err(fail(e.into())),
            }
        }
        let temp = parent.join(&temp_name);
        let done = std::fs::write(&temp, content)
            .and_then(|()| {
                #[cfg(unix)]
                if existing.is_some() {
                    std::fs::set_permissions(
                        &temp,
                        std::os::unix::fs::PermissionsExt::from_mode(mode),
                    )?;
                }
                Ok(())
            })
            .and_then(|()| std::fs::rename(&temp, &target));
        if let Err(e) = done {
            let _ = std::fs::remove_file(&temp);
            return Err(fail(e));
        }
        Ok(Written {
            path: shown,
            existed: existing.is_some(),
        })
    }

    /// Creates the missing folders of `folder` (an absolute lexical path inside the root),
    /// after checking that the deepest one that exists is inside the root once symlinks
    /// are followed.
    fn make_folders(&self, requested: &str, folder: &Path) -> Result<(), ToolError> {
        let mut existing = folder;
        while std::fs::symlink_metadata(existing).is_err() {
            existing = existing.parent().ok_or_else(|| outside(requested))?;
        }
        if !self.contains_real(existing) {
            return Err(outside(requested));
        }
        if existing != folder {
            std::fs::create_dir_all(folder)
                .map_err(|e| ToolError::new(format!("{}: {e}", self.relative(folder))))?;
        }
        if !self.contains_real(folder) {
            return Err(outside(requested));
        }
        Ok(())
    }
}

/// The root folder opened for `openat2` (`None` where it cannot be).
fn open_root(path: &Path) -> Option<std::os::fd::OwnedFd> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{Mode, OFlags};
        rustix::fs::open(
            path,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        None
    }
}

/// The error of opening or resolving `requested`.
fn open_error(requested: &str, e: std::io::Error) -> ToolError {
    match e.kind() {
        std::io::ErrorKind::NotFound => {
            ToolError::new(format!("{requested}: no such file or directory"))
        }
        _ => ToolError::new(format!("{requested}: {e}")),
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

    /// The kernel's scoping and the resolution by hand (where `openat2` is missing) agree.
    #[cfg(unix)]
    #[test]
    fn both_ways_of_opening_refuse_and_allow_the_same_paths() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::create_dir(p.join("src")).unwrap();
        std::fs::write(p.join("notes.txt"), "n").unwrap();
        std::fs::write(outside.path().join("secret.txt"), "s").unwrap();
        let link =
            |target: &Path, name: &str| std::os::unix::fs::symlink(target, p.join(name)).unwrap();
        link(&outside.path().join("secret.txt"), "abs_out");
        link(outside.path(), "dir_out");
        link(Path::new("../.."), "src/esc");
        link(Path::new("notes.txt"), "in");
        link(Path::new("../notes.txt"), "src/up_in");
        let kernel = Root::new(p).unwrap();
        assert!(kernel.dir.is_some() || !cfg!(target_os = "linux"));
        let by_hand = Root {
            dir: None,
            ..kernel.clone()
        };
        let escape = format!(
            "src/esc/{}/secret.txt",
            outside.path().file_name().unwrap().to_str().unwrap()
        );
        for root in [&kernel, &by_hand] {
            for bad in ["abs_out", "dir_out/secret.txt", escape.as_str(), "../x"] {
                let e = root.open(bad).unwrap_err();
                assert!(
                    e.message().ends_with(
                        "the path is outside the root folder; use a path relative to the root"
                    ),
                    "{bad}: {}",
                    e.message()
                );
            }
            for (good, shown) in [
                ("in", "in"),
                ("src/up_in", "src/up_in"),
                ("notes.txt", "notes.txt"),
                ("./src/../notes.txt", "notes.txt"),
                ("src//up_in", "src/up_in"),
            ] {
                let (_, relative) = root.open(good).unwrap();
                assert_eq!(relative, shown, "{good}");
            }
            let absolute = root.path().join("notes.txt");
            assert_eq!(
                root.open(absolute.to_str().unwrap()).unwrap().1,
                "notes.txt"
            );
            let e = root.open("missing.txt").unwrap_err();
            assert_eq!(e.message(), "missing.txt: no such file or directory");
        }
    }
}
