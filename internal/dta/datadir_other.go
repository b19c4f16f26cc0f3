//go:build !unix

package dta

import (
	"errors"
	"io/fs"
	"os"
)

// Off Unix a writer's stores are refused when mapped (region_other.go), so the data
// directory's checks (datadir_unix.go) have nothing to protect: the directory is created,
// the files opened, and there is no lock.

func lockDataDir(dir string, create bool) (*os.File, error) {
	if create {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// dataDirFree: there is no lock here.
func dataDirFree(string) error { return nil }

func openStoreFile(path string) (f *os.File, size int64, fresh bool, err error) {
	f, err = os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		fresh = true
	}
	if err != nil {
		return nil, 0, false, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, false, err
	}
	return f, st.Size(), fresh, nil
}

func openReadOnly(path string) (*os.File, error) { return os.Open(path) }

// checkOwned: no owners to check (writable stores are refused here).
func checkOwned(string, fs.FileInfo) error { return nil }
