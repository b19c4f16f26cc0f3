//go:build linux

package docstest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/intake-int/intake/internal/config"
)

// TestDeployConfig: the package's /etc/intake/intake.yaml loads as serve --check loads it,
// with the data directory the unit's StateDirectory holds.
func TestDeployConfig(t *testing.T) {
	c, err := config.Load(filepath.Join(root, "deploy", "intake.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if c.DTA.DataDir != "/var/lib/intake/dta" {
		t.Errorf("dta.data_dir %q, want /var/lib/intake/dta (StateDirectory=intake)", c.DTA.DataDir)
	}
}

// TestDebianPackage builds the package with deploy/build-deb.sh (from the test's intake
// build), installs it into this system with dpkg -i, checks what it installed (the files,
// the intake user, the configuration through serve --check as that user, the unit through
// systemd-analyze verify where it exists) and purges it. It needs root and dpkg, and is
// skipped, saying why, without them or where a package named intake is installed already
// (it is not replaced).
func TestDebianPackage(t *testing.T) {
	switch {
	case testing.Short():
		t.Skip("-short: installs a package")
	case os.Geteuid() != 0:
		t.Skip("not root: dpkg -i needs root (docs/deploy.md)")
	}
	for _, tool := range []string{"dpkg-deb", "dpkg", "getent"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is missing: the Debian package cannot be built or installed here", tool)
		}
	}
	if exec.Command("dpkg", "-s", "intake").Run() == nil {
		t.Skip("a package named intake is installed on this machine: the test does not replace it")
	}
	run := func(name string, args ...string) string {
		t.Helper()
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	userExisted := exec.Command("getent", "passwd", "intake").Run() == nil
	deb := strings.TrimSpace(run(filepath.Join(root, "deploy", "build-deb.sh"), "--binary", intakeBinary(t), "--out", t.TempDir()))
	t.Cleanup(func() {
		exec.Command("dpkg", "--purge", "intake").Run()
		if !userExisted {
			exec.Command("userdel", "intake").Run()
		}
	})
	run("dpkg", "-i", deb)

	for path, mode := range map[string]os.FileMode{
		"/usr/bin/intake":                                0o755,
		"/usr/lib/systemd/system/intake.service":         0o644,
		"/etc/intake/intake.yaml":                        0o644,
		"/usr/share/doc/intake/docs/deploy.md":           0o644,
		"/usr/share/doc/intake/README.md":                0o644,
		"/usr/share/intake/grafana/intake-influxdb.json": 0o644,
	} {
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm() != mode {
			t.Errorf("%s: %v, mode %v, want %v", path, err, st, mode)
		}
	}
	if b, _ := os.ReadFile("/usr/lib/systemd/system/intake.service"); !bytes.Equal(b, mustRead(t, "deploy/intake.service")) {
		t.Error("the installed unit is not deploy/intake.service")
	}
	if conf := run("dpkg-query", "-W", "-f", "${Conffiles}", "intake"); !strings.Contains(conf, "/etc/intake/intake.yaml") {
		t.Errorf("conffiles: %q, want /etc/intake/intake.yaml", conf)
	}
	pw := strings.Split(strings.TrimSpace(run("getent", "passwd", "intake")), ":")
	if len(pw) != 7 || pw[5] != "/var/lib/intake" || pw[6] != "/usr/sbin/nologin" {
		t.Errorf("user intake: %v, want home /var/lib/intake and shell /usr/sbin/nologin", pw)
	}
	// The installed configuration is valid for the service's user (runuser: the user has
	// no shell).
	check := []string{"/usr/bin/intake", "serve", "--config", "/etc/intake/intake.yaml", "--check", "--force"}
	if _, err := exec.LookPath("runuser"); err == nil {
		check = append([]string{"-u", "intake", "--"}, check...)
		out := run("runuser", check...)
		if !strings.HasPrefix(out, "/etc/intake/intake.yaml: ok: 4 listeners") {
			t.Errorf("serve --check as intake:\n%s", out)
		}
	}
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Log("systemd-analyze is missing: the unit is not verified (./test --install-only installs systemd)")
	} else if out, err := exec.Command("systemd-analyze", "verify", "/usr/lib/systemd/system/intake.service").CombinedOutput(); err != nil || len(out) != 0 {
		t.Errorf("systemd-analyze verify intake.service: %v\n%s", err, out)
	}

	run("dpkg", "--purge", "intake")
	for _, path := range []string{"/usr/bin/intake", "/usr/lib/systemd/system/intake.service", "/etc/intake", "/usr/share/doc/intake", "/var/lib/intake"} {
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%s after dpkg --purge: %v", path, err)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
