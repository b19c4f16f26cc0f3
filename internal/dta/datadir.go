package dta

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The data directory holds files that the collector maps read-write and that whoever can
// write the directory could replace: a symbolic link where a store should be (the collector
// would create or grow the file it points to), a crafted store, a second writer. So the
// collector trusts a data directory only when no other user can change it:
//
//   - the directory is created 0700 when missing; it must be a directory (not a symbolic
//     link) owned by this user and writable by no one else, and every directory above it must
//     belong to root or this user and be writable by no one else unless sticky (/tmp,
//     /dev/shm), so that no other user can rename it away;
//   - each store is opened without following symbolic links and checked on the open file
//     (fstat): a regular file owned by this user, writable by no one else;
//   - one writer per directory: an exclusive flock on LockFile, which holds the writer's pid
//     so that a second writer's error names it;
//   - an existing store is never re-created: an empty or wrongly sized file is an error, and
//     ResetStores (`intake dta reset`) removes the stores on purpose.
//
// The checks are Unix's (datadir_unix.go); elsewhere writable stores are refused anyway
// (region_other.go).

// LockFile is the data directory's lock file: the writer's pid, locked with flock.
const LockFile = "lock"

// storeFiles are the region files of a data directory.
var storeFiles = []string{FileKW, FilePaths, FileKI, FilePostcard, FileAppend}

// DefaultDataDir is data_dir's default: "dta" in the directory systemd gives the service
// ($RUNTIME_DIRECTORY, the first when it lists several), else /dev/shm/intake-<uid>/dta —
// tmpfs, memory as in the papers, under a directory of this user's alone. A variable so that
// a test binary can point the default somewhere of its own (cmd/intake's tests do).
var DefaultDataDir = defaultDataDir(os.Getenv("RUNTIME_DIRECTORY"), os.Getuid())

func defaultDataDir(runtimeDir string, uid int) string {
	if d, _, _ := strings.Cut(runtimeDir, ":"); d != "" {
		return filepath.Join(d, "dta")
	}
	return filepath.Join("/dev/shm", fmt.Sprintf("intake-%d", uid), "dta")
}

// ErrLocked is returned (wrapped) when another process holds a data directory's lock.
var ErrLocked = errors.New("in use by another writer")

// lockedError names the process holding dir's lock, read from the lock file.
func lockedError(dir string, f *os.File) error {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid := strings.TrimSpace(string(b[:n]))
	if pid == "" {
		pid = "unknown"
	}
	return fmt.Errorf("%s: %w (pid %s holds %s): one writing collector per data directory", dir, ErrLocked, pid, filepath.Join(dir, LockFile))
}

// CheckDataDir is `intake serve --check`'s look at the data directory: with the stores on,
// it fails as OpenStores would at start when another process holds the directory's lock (a
// collector writing there), so that two configurations sharing one directory are caught
// before either starts the second time. It creates and writes nothing (a directory or lock
// file not there yet is free) and releases the lock at once; the directory's other checks
// (owner, modes) are the start's.
func (c *Config) CheckDataDir() error {
	if !c.Enabled {
		return nil
	}
	if err := dataDirFree(c.DataDir); err != nil {
		return fmt.Errorf("dta.data_dir: %w", err)
	}
	return nil
}

// ResetStores removes the store files of dir (the five regions; snapshots in epochs/ stay)
// so that the next writer creates them empty, and returns the files it removed. It takes the
// directory's lock like a writer, so it fails while a collector uses dir, and it checks dir
// as a writer does.
func ResetStores(dir string) (removed []string, err error) {
	lock, err := lockDataDir(dir, false)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	for _, name := range storeFiles {
		p := filepath.Join(dir, name)
		if err := os.Remove(p); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return removed, err
		}
		removed = append(removed, p)
	}
	return removed, nil
}
