//go:build unix

package dta

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// The data directory is trusted only when no other user can change it (docs/dta.md, "Data
// directory and store files").

// openErr opens the stores of cfg for writing and returns the error (closing them if the open
// wrongly succeeded).
func openErr(cfg *Config) error {
	st, err := OpenStores(cfg)
	if err == nil {
		st.Close()
	}
	return err
}

// wantErr checks err's text exactly.
func wantErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	if err == nil || err.Error() != want {
		t.Errorf("%s: %v\nwant %s", what, err, want)
	}
}

// A symbolic link planted as a store is refused, and its target is neither created nor
// grown; so is a data directory that is itself a link.
func TestDataDirSymlinks(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	target := filepath.Join(elsewhere, "victim")
	if err := os.Symlink(target, filepath.Join(dir, FileKW)); err != nil {
		t.Fatal(err)
	}
	cfg := smallConfig(dir)
	wantErr(t, "link as kw.dta", openErr(&cfg),
		filepath.Join(dir, FileKW)+": a symbolic link: refused (the data directory and its files must not be links)")
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the link's target exists after the open: %v", err)
	}

	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(elsewhere, link); err != nil {
		t.Fatal(err)
	}
	cfg = smallConfig(link)
	wantErr(t, "link as the data directory", openErr(&cfg),
		"dta.data_dir: "+link+": a symbolic link: refused (the data directory and its files must not be links)")
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 { // the link's target directory: nothing created through the link
		t.Errorf("%d files in the link's target directory", len(ents))
	}
}

// A directory, store or parent that others can write is refused.
func TestDataDirModes(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig(dir)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "directory 0777", openErr(&cfg),
		fmt.Sprintf("dta.data_dir: %s: mode 0777: writable by group or others: refused (chmod go-w %s)", dir, dir))
	os.Chmod(dir, 0o700)
	if err := openErr(&cfg); err != nil {
		t.Fatal(err)
	}
	kw := filepath.Join(dir, FileKW)
	os.Chmod(kw, 0o666)
	wantErr(t, "kw.dta 0666", openErr(&cfg),
		fmt.Sprintf("%s: mode 0666: writable by group or others: refused (chmod go-w %s)", kw, kw))

	// A world-writable parent without the sticky bit: anyone could rename the data
	// directory away and put another in its place. Sticky (as /tmp and /dev/shm) is fine.
	parent := t.TempDir()
	os.Chmod(parent, 0o777)
	cfg = smallConfig(filepath.Join(parent, "dta"))
	wantErr(t, "parent 0777", openErr(&cfg),
		fmt.Sprintf("dta.data_dir: %s (above the data directory %s): mode 0777: writable by group or others without the sticky bit: refused", parent, cfg.DataDir))
	os.Chmod(parent, 0o777|os.ModeSticky)
	if err := openErr(&cfg); err != nil {
		t.Errorf("sticky parent: %v", err)
	}
}

// needRoot skips a test that has to give files to another user.
func needRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root")
	}
}

const nobody = 65534

// A directory, store or parent of another user's is refused: the default's parent
// (/dev/shm/intake-<uid>) created first by someone else is the attack these checks stop: its
// owner could replace the store files the collector maps.
func TestDataDirOwners(t *testing.T) {
	needRoot(t)
	parent := t.TempDir()
	squat := filepath.Join(parent, "intake-0")
	if err := os.Mkdir(squat, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chown(squat, nobody, nobody)
	cfg := smallConfig(filepath.Join(squat, "dta"))
	wantErr(t, "another user's parent", openErr(&cfg),
		fmt.Sprintf("dta.data_dir: %s (above the data directory %s): owned by uid %d, neither root nor this user (uid 0): refused", squat, cfg.DataDir, nobody))

	dir := t.TempDir()
	cfg = smallConfig(dir)
	os.Chown(dir, nobody, nobody)
	wantErr(t, "another user's directory", openErr(&cfg),
		fmt.Sprintf("dta.data_dir: %s: owned by uid %d, not by this user (uid 0): refused", dir, nobody))
	os.Chown(dir, 0, 0)
	if err := openErr(&cfg); err != nil {
		t.Fatal(err)
	}
	ki := filepath.Join(dir, FileKI)
	os.Chown(ki, nobody, nobody)
	wantErr(t, "another user's ki.dta", openErr(&cfg),
		fmt.Sprintf("%s: owned by uid %d, not by this user (uid 0): refused", ki, nobody))
}

// One writer per directory: the second fails naming the first's pid (this process here);
// after the first closes, the directory opens again.
func TestDataDirLock(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig(dir)
	st, err := OpenStores(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = openErr(&cfg)
	wantErr(t, "second writer", err, fmt.Sprintf("dta.data_dir: %s: in use by another writer (pid %d holds %s): one writing collector per data directory",
		dir, os.Getpid(), filepath.Join(dir, LockFile)))
	if !errors.Is(err, ErrLocked) {
		t.Errorf("%v is not ErrLocked", err)
	}
	if _, err := ResetStores(dir); !errors.Is(err, ErrLocked) {
		t.Errorf("reset under a writer: %v", err)
	}
	st.Close()
	if err := openErr(&cfg); err != nil {
		t.Errorf("after the first writer closed: %v", err)
	}
}

// CheckDataDir (serve --check) fails while a writer holds the directory, with the error the
// second writer gets, and passes once it closed; a directory not there yet passes and is not
// created; with the stores off nothing is checked.
func TestCheckDataDir(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig(dir)
	if err := cfg.CheckDataDir(); err != nil {
		t.Errorf("no writer yet: %v", err)
	}
	st, err := OpenStores(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.CheckDataDir()
	wantErr(t, "check under a writer", err, fmt.Sprintf("dta.data_dir: %s: in use by another writer (pid %d holds %s): one writing collector per data directory",
		dir, os.Getpid(), filepath.Join(dir, LockFile)))
	if !errors.Is(err, ErrLocked) {
		t.Errorf("%v is not ErrLocked", err)
	}
	off := cfg
	off.Enabled = false
	if err := off.CheckDataDir(); err != nil {
		t.Errorf("stores off: %v", err)
	}
	// The check released the lock it took: the writer's lock is still the only one, and
	// the writer's pid is still in the lock file.
	if b, _ := os.ReadFile(filepath.Join(dir, LockFile)); string(b) != strconv.Itoa(os.Getpid())+"\n" {
		t.Errorf("lock file holds %q after the check", b)
	}
	st.Close()
	if err := cfg.CheckDataDir(); err != nil {
		t.Errorf("after the writer closed: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "not", "yet")
	cfg.DataDir = missing
	if err := cfg.CheckDataDir(); err != nil {
		t.Errorf("a directory not there yet: %v", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the check created %s: %v", missing, err)
	}
}

// An empty or wrongly sized store is an error, never re-created empty; ResetStores removes
// the stores on purpose (and only them), after which they are created again.
func TestDataDirEmptyStoreAndReset(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig(dir)
	st, err := OpenStores(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	st.KW.Insert(be32(1), be32(2), 2)
	st.Close()
	kw := filepath.Join(dir, FileKW)
	if err := os.Truncate(kw, 0); err != nil {
		t.Fatal(err)
	}
	size := headerSize + cfg.KeyWrite.Slots*8
	wantErr(t, "empty kw.dta", openErr(&cfg),
		fmt.Sprintf("%s: 0 bytes, the configuration needs %d: not a DTA region: reset the stores (intake dta reset)", kw, size))
	os.Truncate(kw, int64(size+8))
	wantErr(t, "long kw.dta", openErr(&cfg),
		fmt.Sprintf("%s: %d bytes, the configuration needs %d: the geometry changed: restore the configuration, or reset the stores (intake dta reset)", kw, size+8, size))
	if fi, _ := os.Stat(kw); fi.Size() != int64(size+8) {
		t.Errorf("kw.dta is %d bytes after the refused opens", fi.Size())
	}

	os.MkdirAll(filepath.Join(dir, EpochDir, "1"), 0o700)
	removed, err := ResetStores(dir)
	var want []string
	for _, f := range storeFiles {
		want = append(want, filepath.Join(dir, f))
	}
	if err != nil || !slices.Equal(removed, want) {
		t.Errorf("reset: %v %v, want %v", removed, err, want)
	}
	if _, err := os.Stat(filepath.Join(dir, EpochDir, "1")); err != nil {
		t.Errorf("reset removed the snapshots: %v", err)
	}
	st, err = OpenStores(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if r, _ := st.KW.Query(be32(1), 0, 0); r.Status != NotFound {
		t.Errorf("after reset: %+v", r)
	}
	if removed, err := ResetStores(filepath.Join(dir, "missing")); err == nil {
		t.Errorf("reset of a missing directory: %v", removed)
	}
}

// The default lives in a directory of this user's alone, created 0700; under systemd in
// $RUNTIME_DIRECTORY.
func TestDefaultDataDir(t *testing.T) {
	for _, tc := range []struct {
		runtime string
		uid     int
		want    string
	}{
		{"", 1000, "/dev/shm/intake-1000/dta"},
		{"", 0, "/dev/shm/intake-0/dta"},
		{"/run/intake", 0, "/run/intake/dta"},
		{"/run/intake:/run/other", 1000, "/run/intake/dta"},
	} {
		if got := defaultDataDir(tc.runtime, tc.uid); got != tc.want {
			t.Errorf("defaultDataDir(%q, %d) = %s, want %s", tc.runtime, tc.uid, got, tc.want)
		}
	}
	base := filepath.Join(t.TempDir(), fmt.Sprintf("intake-%d", os.Getuid()))
	cfg := smallConfig(filepath.Join(base, "dta"))
	if err := openErr(&cfg); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{base, cfg.DataDir} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want mode 0700", d, fi.Mode(), err)
		}
	}
}

// A symbolic link above the data directory that another user owns was followed (with
// fs.protected_symlinks = 0, or outside a sticky directory): its owner chose the directory
// the collector writes. Now it is refused, found with Lstat whatever the sysctl says; a
// link of this user's (or root's) is followed as before.
func TestDataDirSymlinkAbove(t *testing.T) {
	needRoot(t)
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	cfg := smallConfig(filepath.Join(link, "dta"))
	if err := openErr(&cfg); err != nil {
		t.Fatalf("this user's link: %v", err)
	}
	if err := os.Lchown(link, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "another user's link above", openErr(&cfg),
		fmt.Sprintf("dta.data_dir: %s (above the data directory %s): a symbolic link owned by uid %d, neither root nor this user (uid 0): refused (its owner can point it elsewhere; give the path without it)", link, cfg.DataDir, nobody))
	// Two levels above, the same.
	cfg = smallConfig(filepath.Join(link, "a", "dta"))
	wantErr(t, "another user's link two above", openErr(&cfg),
		fmt.Sprintf("dta.data_dir: %s (above the data directory %s): a symbolic link owned by uid %d, neither root nor this user (uid 0): refused (its owner can point it elsewhere; give the path without it)", link, cfg.DataDir, nobody))
}

// Epoch snapshots go to epochs/<unix seconds>/, the newest retain kept. An epochs symbolic
// link in the data directory was followed (the snapshots written, and old ones removed,
// wherever it pointed); now it is refused and nothing is written through it.
func TestEpochSnapshots(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig(dir)
	st, err := OpenStores(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.KI.Add([]byte{0, 0, 0, 7}, 5, 2)
	for _, sec := range []int64{100, 101, 102} {
		d, err := st.Snapshot(time.Unix(sec, 0), 2)
		if want := filepath.Join(dir, EpochDir, strconv.FormatInt(sec, 10)); err != nil || d != want {
			t.Fatalf("snapshot %d: %q %v, want %q", sec, d, err, want)
		}
	}
	ents, _ := os.ReadDir(filepath.Join(dir, EpochDir))
	if len(ents) != 2 || ents[0].Name() != "101" || ents[1].Name() != "102" {
		t.Errorf("epochs: %v, want 101 and 102", ents)
	}
	ro, err := OpenStoresReadOnly(filepath.Join(dir, EpochDir, "102"))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := ro.KI.Count([]byte{0, 0, 0, 7}, 2); c != 5 || err != nil {
		t.Errorf("count in the snapshot: %d %v, want 5", c, err)
	}
	ro.Close()

	elsewhere := t.TempDir()
	os.RemoveAll(filepath.Join(dir, EpochDir))
	if err := os.Symlink(elsewhere, filepath.Join(dir, EpochDir)); err != nil {
		t.Fatal(err)
	}
	_, err = st.Snapshot(time.Unix(103, 0), 2)
	wantErr(t, "epochs a link", err, filepath.Join(dir, EpochDir)+": a symbolic link: refused (the data directory and its files must not be links)")
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("%d files written through the link", len(ents))
	}
	// A link as the snapshot's own directory, the same.
	os.Remove(filepath.Join(dir, EpochDir))
	os.Mkdir(filepath.Join(dir, EpochDir), 0o700)
	if err := os.Symlink(elsewhere, filepath.Join(dir, EpochDir, "104")); err != nil {
		t.Fatal(err)
	}
	_, err = st.Snapshot(time.Unix(104, 0), 2)
	wantErr(t, "epochs/104 a link", err, filepath.Join(dir, EpochDir, "104")+": a symbolic link: refused (the data directory and its files must not be links)")
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("%d files written through the link", len(ents))
	}
}
