// Package pgtest starts a throwaway PostgreSQL server for tests: initdb into a temporary
// directory, postgres on a free loopback port with password authentication, stopped and
// removed when the test ends. The embedded Temporal server's PostgreSQL tests run on it, so
// they exercise a real database without Docker.
//
// PostgreSQL refuses to run as root, and CI runs as root: there the server runs as the
// postgres user that Debian's package creates, in a directory it owns. A machine without
// PostgreSQL skips the tests with InstallHint; .ci/run installs the package, so CI runs them.
package pgtest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schooner-ml/schooner/internal/netaddr"
	"github.com/schooner-ml/schooner/internal/syncbuf"
)

// InstallHint says what a machine without PostgreSQL needs.
const InstallHint = "PostgreSQL is not installed: install the Debian package `postgresql` (apt-get install postgresql) to run this test"

// The superuser of every test server; its password is what makes the wrong-password case
// testable.
const (
	User     = "schooner"
	Password = "schooner-test-pw"
)

// Server is a running test PostgreSQL.
type Server struct {
	Host string // 127.0.0.1
	Port int
	Dir  string // the data directory (and the unix socket's)
}

// URL is the address of database db on the server as the superuser, in the form
// `schooner dev --db` takes.
func (s *Server) URL(db string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(User, Password),
		Host: net.JoinHostPort(s.Host, strconv.Itoa(s.Port)), Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// Binaries is the directory holding initdb and postgres: PATH first, then the newest
// /usr/lib/postgresql/<version>/bin (Debian does not put them on PATH).
func Binaries() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("postgres"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if isFile(filepath.Join(d, "initdb")) && isFile(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", fmt.Errorf("no initdb and postgres on PATH or in /usr/lib/postgresql/*/bin")
}

// version is the major version in /usr/lib/postgresql/<version>/bin.
func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// Start runs a fresh server for t, or skips t when PostgreSQL is not installed. The server
// stops and its directory goes when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binaries()
	if err != nil {
		t.Skipf("%s (%v)", InstallHint, err)
	}
	owner, err := runAs()
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: its parent is private to root, and the postgres user must reach this.
	dir, err := os.MkdirTemp("", "schooner-pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if owner != nil {
		if err := os.Chown(dir, int(owner.Uid), int(owner.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte(Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	initdb := command(owner, filepath.Join(bin, "initdb"), "-D", data, "-U", User, "--pwfile", pwFile,
		"--auth-host", "scram-sha-256", "--auth-local", "trust", "-E", "UTF8", "--locale", "C", "--no-sync")
	if owner != nil {
		if err := os.Chown(pwFile, int(owner.Uid), int(owner.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	s := &Server{Host: "127.0.0.1", Dir: data}
	// Another process may take the free port before postgres binds it: try a few.
	for attempt := 1; ; attempt++ {
		if s.Port, err = netaddr.FreePort("127.0.0.1"); err != nil {
			t.Fatal(err)
		}
		var log syncbuf.Buffer
		stop, err := s.run(owner, bin, &log)
		if err == nil {
			t.Cleanup(stop)
			return s
		}
		if attempt == 3 {
			t.Fatalf("starting postgres: %v\n%s", err, log.String())
		}
	}
}

// run starts postgres and waits until it accepts connections; stop ends it with a fast
// shutdown (SIGINT: clients disconnected, no waiting for them).
func (s *Server) run(owner *syscall.Credential, bin string, log *syncbuf.Buffer) (stop func(), err error) {
	cmd := command(owner, filepath.Join(bin, "postgres"), "-D", s.Dir, "-p", strconv.Itoa(s.Port), "-k", s.Dir,
		"-c", "listen_addresses="+s.Host, "-c", "max_connections=200",
		// A test database need not survive a crash of the machine.
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	// The postmaster listens before it accepts sessions ("the database system is starting
	// up"): wait for a session that works.
	for deadline := time.Now().Add(30 * time.Second); ; {
		select {
		case err := <-exited:
			return nil, fmt.Errorf("postgres exited: %v", err)
		default:
		}
		err := s.connect()
		if err == nil {
			return stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("postgres did not accept a session within 30s: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// connect opens and closes a session as the superuser.
func (s *Server) connect() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// runAs is the user the server runs as: nil (this process's) unless this process is root,
// then Debian's postgres user, since initdb and postgres refuse to run as root.
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and PostgreSQL refuses root: looking up the postgres user (the Debian package `postgresql` creates it): %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// command is name run as owner (this process's user when nil), from the root directory so
// that the postgres user need not be able to enter the current one.
func command(owner *syscall.Credential, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = "/"
	if owner != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: owner}
	}
	return cmd
}
