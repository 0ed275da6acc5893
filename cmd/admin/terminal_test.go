//go:build linux

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"funnelchat/models"
)

// terminalSession runs the admin binary with a pseudo-terminal as its standard input and standard
// error (and its controlling terminal), as an operator at a shell runs it; standard output, the JSON,
// is read apart.
type terminalSession struct {
	t        *testing.T
	cmd      *exec.Cmd
	pty, tty *os.File
	stdout   bytes.Buffer

	mu     sync.Mutex
	screen []byte // everything the terminal showed
	seen   int    // how much of it expect has gone past
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
}

func startOnTerminal(t *testing.T, bin string, args ...string) *terminalSession {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	s := &terminalSession{t: t, pty: ptmx, tty: tty, exited: make(chan struct{})}
	s.cmd = exec.Command(bin, args...)
	s.cmd.Dir = t.TempDir()
	s.cmd.Stdin, s.cmd.Stderr, s.cmd.Stdout = tty, tty, &s.stdout
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start admin: %v", err)
	}
	go func() {
		buf := make([]byte, 1024)
		for {
			n, err := ptmx.Read(buf)
			s.mu.Lock()
			s.screen = append(s.screen, buf[:n]...)
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() {
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-s.exited
		_ = ptmx.Close()
		_ = tty.Close()
	})
	return s
}

// shown returns what the terminal showed so far.
func (s *terminalSession) shown() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.screen)
}

// expect waits until the terminal shows text after what the last expect matched.
func (s *terminalSession) expect(text string) {
	s.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		s.mu.Lock()
		i := bytes.Index(s.screen[s.seen:], []byte(text))
		if i >= 0 {
			s.seen += i + len(text)
		}
		s.mu.Unlock()
		if i >= 0 {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the terminal never showed %q; it showed %q", text, s.shown())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// echo tells whether the terminal echoes what is typed.
func (s *terminalSession) echo() bool {
	s.t.Helper()
	termios, err := unix.IoctlGetTermios(int(s.tty.Fd()), unix.TCGETS)
	if err != nil {
		s.t.Fatalf("read the terminal's modes: %v", err)
	}
	return termios.Lflag&unix.ECHO != 0
}

// waitEchoOff waits until the program has turned the terminal's echo off, so that what is typed next
// would be echoed only if the program failed to.
func (s *terminalSession) waitEchoOff() {
	s.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); s.echo(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			s.t.Fatalf("the terminal still echoes; it showed %q", s.shown())
		}
	}
}

// typeLine types text and Enter, as a person does, once echo is off.
func (s *terminalSession) typeLine(text string) {
	s.t.Helper()
	s.waitEchoOff()
	if _, err := s.pty.Write([]byte(text + "\r")); err != nil {
		s.t.Fatalf("type: %v", err)
	}
}

// wait waits for the program to end and returns its exit code.
func (s *terminalSession) wait() int {
	s.t.Helper()
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		s.t.Fatalf("admin did not exit; the terminal showed %q", s.shown())
	}
	var exit *exec.ExitError
	switch {
	case s.err == nil:
		return 0
	case errors.As(s.err, &exit):
		return exit.ExitCode()
	default:
		s.t.Fatalf("admin: %v", s.err)
		return -1
	}
}

// On a terminal, user set-password asks for the password on standard error, twice, and reads it
// without echo; the pipe case (no prompt) is TestBinary's.
func TestSetPasswordOnTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	store := useBackend(t)
	bin := buildAdmin(t)
	accountEmail := uniqueEmail("terminal")
	createAccount(t, "--email", accountEmail)

	t.Run("asks twice and does not echo", func(t *testing.T) {
		user := addUser(t, "--account-email", accountEmail, "--email", uniqueEmail("typist"))
		const password = "typed at the terminal"
		s := startOnTerminal(t, bin, "user", "set-password", "--email", user.Email)
		s.expect("New password: ")
		s.typeLine(password)
		s.expect("Repeat it: ")
		s.typeLine(password)
		if code := s.wait(); code != 0 {
			t.Fatalf("exit code %d; the terminal showed %q", code, s.shown())
		}
		var got struct {
			UserID string `json:"userId"`
		}
		decodeOne(t, s.stdout.String(), &got)
		if got.UserID != user.UserID {
			t.Errorf("userId %q, want %q", got.UserID, user.UserID)
		}
		if !models.VerifyPassword(password, passwordHash(t, store, user.Email)) {
			t.Errorf("the typed password does not verify against the stored hash")
		}
		if strings.Contains(s.shown(), "typed") {
			t.Errorf("the terminal showed the password: %q", s.shown())
		}
		if !s.echo() {
			t.Errorf("the terminal was left without echo")
		}
	})

	t.Run("a repeat that differs changes nothing", func(t *testing.T) {
		user := addUser(t, "--account-email", accountEmail, "--email", uniqueEmail("typo"))
		s := startOnTerminal(t, bin, "user", "set-password", "--email", user.Email)
		s.expect("New password: ")
		s.typeLine("the first password")
		s.expect("Repeat it: ")
		s.typeLine("the first passwrod")
		if code := s.wait(); code != 1 {
			t.Errorf("exit code %d, want 1", code)
		}
		s.expect("differ")
		if s.stdout.Len() != 0 {
			t.Errorf("stdout %q, want nothing", s.stdout.String())
		}
		if !models.VerifyPassword(user.Password, passwordHash(t, store, user.Email)) {
			t.Errorf("the password changed")
		}
	})

	t.Run("a short password is refused before the repeat", func(t *testing.T) {
		user := addUser(t, "--account-email", accountEmail, "--email", uniqueEmail("short"))
		s := startOnTerminal(t, bin, "user", "set-password", "--email", user.Email)
		s.expect("New password: ")
		s.typeLine("too short")
		if code := s.wait(); code != 1 {
			t.Errorf("exit code %d, want 1", code)
		}
		s.expect("at least 12 characters")
		if strings.Contains(s.shown(), "Repeat it") {
			t.Errorf("asked for the repeat of a refused password: %q", s.shown())
		}
		if !models.VerifyPassword(user.Password, passwordHash(t, store, user.Email)) {
			t.Errorf("the password changed")
		}
	})

	t.Run("Ctrl-C turns echo back on", func(t *testing.T) {
		user := addUser(t, "--account-email", accountEmail, "--email", uniqueEmail("quitter"))
		s := startOnTerminal(t, bin, "user", "set-password", "--email", user.Email)
		s.expect("New password: ")
		s.typeLine("half a pass\x03")
		if code := s.wait(); code == 0 {
			t.Errorf("exit code 0 after an interrupt")
		}
		if !s.echo() {
			t.Errorf("the terminal was left without echo after Ctrl-C")
		}
		if !models.VerifyPassword(user.Password, passwordHash(t, store, user.Email)) {
			t.Errorf("the password changed")
		}
	})
}
