package dta

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"
)

// Region file names in a data directory.
const (
	FileKW       = "kw.dta"
	FilePaths    = "paths.dta"
	FileKI       = "ki.dta"
	FilePostcard = "postcard.dta"
	FileAppend   = "append.dta"
	EpochDir     = "epochs"
)

// Stores are the five regions of a data directory. A store missing from a directory opened
// read-only is nil.
type Stores struct {
	Dir                       string
	KW                        *KeyWrite
	Paths                     *KeyWrite
	KI                        *KeyIncrement
	PC                        *Postcard
	AP                        *Append
	Threshold, PathsThreshold int
	regions                   []*Region
	lock                      *os.File // a writer's lock on Dir (datadir.go)
	faultState                         // fault.go
}

// writerDirs are the data directories this process opened for writing.
var writerDirs struct {
	sync.Mutex
	dirs []string
}

// WriterDirs returns the data directories this process has opened for writing, in order: the
// cmd/intake tests check that none of them is the shared default on /dev/shm.
func WriterDirs() []string {
	writerDirs.Lock()
	defer writerDirs.Unlock()
	return slices.Clone(writerDirs.dirs)
}

// KernelMem is the memory of kernel-written stores (dta.kernel; package xdp's DTAStores):
// the data of the Key-Write, Key-Increment and Append regions, held in BPF arrays, and the
// arrays' ids, which the region headers give readers. AP is nil when the kernel does not
// append (append.value_bytes above 4): the Append region stays the file's.
type KernelMem struct {
	KW, KI, AP       []byte
	KWID, KIID, APID uint32
}

// OpenStores creates or reopens the regions of cfg.DataDir for writing: it creates the
// directory (0700) when missing, refuses one that another user could change, and holds the
// directory's lock until Close (datadir.go).
func OpenStores(cfg *Config) (_ *Stores, err error) { return openStores(cfg, nil) }

// openStores is OpenStores, with the Key-Write, Key-Increment and Append data in kernel
// memory km when set: the files' data is copied in at the start and back at Close.
func openStores(cfg *Config, km *KernelMem) (_ *Stores, err error) {
	writerDirs.Lock()
	writerDirs.dirs = append(writerDirs.dirs, cfg.DataDir)
	writerDirs.Unlock()
	lock, err := lockDataDir(cfg.DataDir, true)
	if err != nil {
		return nil, fmt.Errorf("dta.data_dir: %w", err)
	}
	s := &Stores{Dir: cfg.DataDir, Threshold: cfg.KeyWrite.Threshold, PathsThreshold: cfg.Paths.Threshold, lock: lock}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	open := func(name string, h Header) (*Region, error) {
		r, err := CreateRegion(filepath.Join(cfg.DataDir, name), h, cfg.HugePages)
		if err == nil {
			s.regions = append(s.regions, r)
		}
		return r, err
	}
	r, err := open(FileKW, KWHeader(cfg.KeyWrite, cfg.Seed))
	if err != nil {
		return nil, err
	}
	if km != nil {
		if err := r.useKernel(km.KW, km.KWID); err != nil {
			return nil, err
		}
	}
	if s.KW, err = NewKeyWrite(r); err != nil {
		return nil, err
	}
	if r, err = open(FilePaths, KWHeader(cfg.Paths, cfg.Seed)); err != nil {
		return nil, err
	}
	if s.Paths, err = NewKeyWrite(r); err != nil {
		return nil, err
	}
	if r, err = open(FileKI, KIHeader(cfg.KeyIncrement, cfg.Seed)); err != nil {
		return nil, err
	}
	if km != nil {
		if err := r.useKernel(km.KI, km.KIID); err != nil {
			return nil, err
		}
	}
	if s.KI, err = NewKeyIncrement(r); err != nil {
		return nil, err
	}
	if r, err = open(FilePostcard, PostcardHeader(cfg.Postcard, cfg.Seed)); err != nil {
		return nil, err
	}
	if s.PC, err = NewPostcard(r); err != nil {
		return nil, err
	}
	for _, v := range cfg.Postcard.KnownValues {
		s.PC.Learn(v)
	}
	if r, err = open(FileAppend, AppendHeader(cfg.Append)); err != nil {
		return nil, err
	}
	if km != nil && km.AP != nil {
		if err := r.useKernel(km.AP, km.APID); err != nil {
			return nil, err
		}
	}
	if s.AP, err = NewAppend(r); err != nil {
		return nil, err
	}
	return s, nil
}

// OpenStoresReadOnly maps the regions present in dir read-only: no collector needed.
func OpenStoresReadOnly(dir string) (_ *Stores, err error) {
	s := &Stores{Dir: dir, Threshold: 1, PathsThreshold: 1}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	found := 0
	for _, name := range storeFiles {
		r, err := OpenRegion(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		s.regions = append(s.regions, r)
		found++
		switch name {
		case FileKW:
			s.KW, err = NewKeyWrite(r)
		case FilePaths:
			s.Paths, err = NewKeyWrite(r)
		case FileKI:
			s.KI, err = NewKeyIncrement(r)
		case FilePostcard:
			s.PC, err = NewPostcard(r)
		case FileAppend:
			s.AP, err = NewAppend(r)
		}
		if err != nil {
			return nil, err
		}
	}
	if found == 0 {
		return nil, fmt.Errorf("%s: no DTA region files (%s, %s, %s, %s, %s)", dir, FileKW, FilePaths, FileKI, FilePostcard, FileAppend)
	}
	return s, nil
}

// Regions returns the mapped regions.
func (s *Stores) Regions() []*Region { return s.regions }

// Close unmaps every region and releases a writer's lock.
func (s *Stores) Close() error {
	var errs []error
	errs = append(errs, s.closeRegions())
	s.regions = nil
	if s.lock != nil {
		errs = append(errs, s.lock.Close())
		s.lock = nil
	}
	return errors.Join(errs...)
}

// closeRegions syncs and unmaps the regions, guarded: a kernel-held region's data is
// copied back to its file here (fault.go).
func (s *Stores) closeRegions() (err error) {
	defer s.guard(s.catchFaults(), "close", &err)
	var errs []error
	for _, r := range s.regions {
		errs = append(errs, r.Sync(), r.Close())
	}
	return errors.Join(errs...)
}

// Snapshot copies every region into dir/epochs/<unix seconds>/ and keeps the newest retain
// snapshots (DART §5.2.1): `intake query --store` opens a snapshot directory like any other.
// Everything is opened relative to the data directory, and epochs and the snapshot's
// directory must be directories of this user's, not symbolic links (openSubdir).
func (s *Stores) Snapshot(now time.Time, retain int) (string, error) {
	root, err := os.OpenRoot(s.Dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	base := filepath.Join(s.Dir, EpochDir)
	er, err := openSubdir(root, EpochDir, base)
	if err != nil {
		return "", err
	}
	defer er.Close()
	name := strconv.FormatInt(now.Unix(), 10)
	dir := filepath.Join(base, name)
	sr, err := openSubdir(er, name, dir)
	if err != nil {
		return "", err
	}
	defer sr.Close()
	for _, r := range s.regions {
		if err := r.snapshotTo(sr, filepath.Base(r.Path)); err != nil {
			return "", fmt.Errorf("%s: %w", filepath.Join(dir, filepath.Base(r.Path)), err)
		}
	}
	ents, err := fs.ReadDir(er.FS(), ".")
	if err != nil {
		return dir, err
	}
	var names []int64
	for _, e := range ents {
		if n, err := strconv.ParseInt(e.Name(), 10, 64); err == nil && e.IsDir() {
			names = append(names, n)
		}
	}
	sort.Slice(names, func(i, j int) bool { return names[i] > names[j] })
	for _, n := range names[min(retain, len(names)):] {
		er.RemoveAll(strconv.FormatInt(n, 10))
	}
	return dir, nil
}

// openSubdir opens directory name of parent (path, for messages), creating it 0700 when
// missing: a directory of this user's that no one else can write, never a symbolic link
// (os.Root would follow one that stays inside the data directory), and the one checked
// (the same file as the one opened).
func openSubdir(parent *os.Root, name, path string) (*os.Root, error) {
	if err := parent.Mkdir(name, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	lst, err := parent.Lstat(name)
	if err != nil {
		return nil, err
	}
	switch {
	case lst.Mode()&fs.ModeSymlink != 0:
		return nil, fmt.Errorf("%s: a symbolic link: refused (the data directory and its files must not be links)", path)
	case !lst.IsDir():
		return nil, fmt.Errorf("%s: not a directory (%s): refused", path, lst.Mode().Type())
	}
	if err := checkOwned(path, lst); err != nil {
		return nil, err
	}
	sub, err := parent.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	if st, err := sub.Stat("."); err != nil || !os.SameFile(st, lst) {
		sub.Close()
		return nil, fmt.Errorf("%s: replaced while it was opened: refused", path)
	}
	return sub, nil
}
