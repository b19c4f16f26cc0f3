//go:build unix

package dta

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// The data directory's checks (datadir.go) on Unix: ownership and modes from fstat of the
// opened directory and files, O_NOFOLLOW, flock.

// lockDataDir checks dir (creating it 0700 first when create is set) and takes its lock: the
// open lock file, whose Close releases it.
func lockDataDir(dir string, create bool) (*os.File, error) {
	if create {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	if err := checkAncestors(dir); err != nil {
		return nil, err
	}
	d, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, noFollowError(dir, err)
	}
	st, err := d.Stat()
	d.Close()
	if err != nil {
		return nil, err
	}
	if err := checkOwned(dir, st); err != nil {
		return nil, err
	}
	lp := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, noFollowError(lp, err)
	}
	if err := checkRegular(lp, f); err != nil {
		f.Close()
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, lockedError(dir, f)
		}
		return nil, fmt.Errorf("%s: flock: %w", lp, err)
	}
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt(pid, 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", lp, err)
	}
	return f, nil
}

// dataDirFree fails when another process holds dir's lock (CheckDataDir). The lock file is
// opened read-only and not created; flock takes an exclusive lock on any open mode.
func dataDirFree(dir string) error {
	lp := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(lp, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return noFollowError(lp, err)
	}
	defer f.Close() // releases the lock
	if err := checkRegular(lp, f); err != nil {
		return err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return lockedError(dir, f)
		}
		return fmt.Errorf("%s: flock: %w", lp, err)
	}
	return nil
}

// openStoreFile opens a writer's store file, creating it (empty: fresh) when it does not
// exist, without following a symbolic link, and checks the file it opened.
func openStoreFile(path string) (f *os.File, size int64, fresh bool, err error) {
	const flags = os.O_RDWR | syscall.O_NOFOLLOW | syscall.O_NONBLOCK
	f, err = os.OpenFile(path, flags, 0)
	if errors.Is(err, fs.ErrNotExist) {
		f, err = os.OpenFile(path, flags|os.O_CREATE|os.O_EXCL, 0o644)
		fresh = true
	}
	if err != nil {
		return nil, 0, false, noFollowError(path, err)
	}
	if err := checkRegular(path, f); err != nil {
		f.Close()
		return nil, 0, false, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, false, err
	}
	return f, st.Size(), fresh, nil
}

// openReadOnly opens a region for reading. O_NONBLOCK: a FIFO planted as a store must not
// block the open (OpenRegion then refuses anything but a regular file).
func openReadOnly(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// noFollowError explains an open with O_NOFOLLOW that met a symbolic link (ELOOP on Linux
// and macOS, EMLINK on FreeBSD).
func noFollowError(path string, err error) error {
	if st, lerr := os.Lstat(path); lerr == nil && st.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s: a symbolic link: refused (the data directory and its files must not be links)", path)
	}
	return err
}

// checkRegular checks an opened file: a regular file, owned by this user, writable by no
// one else.
func checkRegular(path string, f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file (%s): refused", path, st.Mode().Type())
	}
	return checkOwned(path, st)
}

// checkOwned checks that st (of path) is owned by this user and writable by no one else.
func checkOwned(path string, st fs.FileInfo) error {
	uid, euid := st.Sys().(*syscall.Stat_t).Uid, os.Geteuid()
	if int(uid) != euid {
		return fmt.Errorf("%s: owned by uid %d, not by this user (uid %d): refused", path, uid, euid)
	}
	if m := st.Mode().Perm(); m&0o022 != 0 {
		return fmt.Errorf("%s: mode %04o: writable by group or others: refused (chmod go-w %s)", path, m, path)
	}
	return nil
}

// checkAncestors checks every directory above dir, both along the path as written and along
// the path with its symbolic links resolved: root's or this user's, and writable by no one
// else unless sticky (/tmp, /dev/shm), so that no other user can move dir away and put
// another in its place. A symbolic link among the components above dir must be root's or
// this user's too: another user's link (in a sticky /tmp its owner may replace it at any
// time) would choose the directory the collector writes. The links are found with Lstat
// here, whatever fs.protected_symlinks says.
func checkAncestors(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	euid := os.Geteuid()
	for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			if uid := st.Sys().(*syscall.Stat_t).Uid; uid != 0 && int(uid) != euid {
				return fmt.Errorf("%s (above the data directory %s): a symbolic link owned by uid %d, neither root nor this user (uid %d): refused (its owner can point it elsewhere; give the path without it)", p, dir, uid, euid)
			}
		}
		if err := checkAncestor(p, dir, euid); err != nil {
			return err
		}
		if filepath.Dir(p) == p {
			break
		}
	}
	p, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return err
	}
	for {
		if err := checkAncestor(p, dir, euid); err != nil {
			return err
		}
		up := filepath.Dir(p)
		if up == p {
			return nil
		}
		p = up
	}
}

// checkAncestor checks directory p (links followed) above the data directory dir.
func checkAncestor(p, dir string, euid int) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	uid := st.Sys().(*syscall.Stat_t).Uid
	if uid != 0 && int(uid) != euid {
		return fmt.Errorf("%s (above the data directory %s): owned by uid %d, neither root nor this user (uid %d): refused", p, dir, uid, euid)
	}
	if m := st.Mode(); m.Perm()&0o022 != 0 && m&fs.ModeSticky == 0 {
		return fmt.Errorf("%s (above the data directory %s): mode %04o: writable by group or others without the sticky bit: refused", p, dir, m.Perm())
	}
	return nil
}
